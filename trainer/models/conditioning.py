"""Text conditioning for every family (the family's adapter encodes), with a cache for when the text encoders are
frozen."""

from __future__ import annotations

import torch

from trainer.models.family import family as model_family
from trainer.models.family import family_of_pipeline


def text_pairs(pipe, family: str | None = None) -> list[tuple]:
    """The (tokenizer, text encoder) pairs ``pipe`` holds, in its family's order (the family of ``pipe``'s class
    when not given): one for SD1.5, CLIP-L then OpenCLIP-G for SDXL."""
    adapter = model_family(family) if family else family_of_pipeline(type(pipe).__name__)
    return [(tok, enc) for tok, enc in adapter.text_pairs(pipe) if tok is not None and enc is not None]


class TextConditioner:
    """Turns captions into the denoiser's text conditioning: the hidden states and, for families that take one,
    the pooled embedding. An encoder the pipeline was loaded without stays None (the family fills its place)."""

    def __init__(self, pipe, family: str, device: torch.device, cache: bool):
        self.family = model_family(family)
        self.device = device
        pairs = self.family.text_pairs(pipe)
        self.tokenizers = [tok for tok, _ in pairs]
        self.encoders = [enc for _, enc in pairs]
        self.max_lengths = [te.max_length or (tok.model_max_length if tok is not None else 0)
                            for te, (tok, _) in zip(self.family.text_encoders, pairs)]
        self.cache_enabled = cache
        self._cache: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}

    def _ids(self, tokenizer, captions: list[str], max_length: int) -> torch.Tensor:
        return tokenizer(
            captions, padding="max_length", max_length=max_length, truncation=True, return_tensors="pt",
        ).input_ids.to(self.device)

    def _encode(self, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        ids = [None if tok is None else self._ids(tok, captions, n) for tok, n in zip(self.tokenizers, self.max_lengths)]
        return self.family.encode_text(self.encoders, ids)

    def __call__(self, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not self.cache_enabled:
            return self._encode(captions)
        missing = sorted({c for c in captions if c not in self._cache})
        if missing:
            with torch.no_grad():
                hidden, pooled = self._encode(missing)
            for i, c in enumerate(missing):
                self._cache[c] = (hidden[i].float(), None if pooled is None else pooled[i].float())
        hidden = torch.stack([self._cache[c][0] for c in captions])
        # a family with pooled text caches a pooled embedding for every caption
        pooled = None if not self.family.pooled_text else torch.stack([self._cache[c][1] for c in captions])  # type: ignore[misc]
        return hidden, pooled

    def clear_cache(self) -> None:
        """Forget cached embeddings (after the text encoders changed dtype)."""
        self._cache.clear()
