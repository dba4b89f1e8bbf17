"""Text conditioning for SD1.5 and SDXL, with a cache for when the text encoders are frozen."""

from __future__ import annotations

import torch

from trainer.models.family import family as model_family


def text_pairs(pipe) -> list[tuple]:
    """The pipeline's (tokenizer, text encoder) pairs: one for SD1.5, CLIP-L then OpenCLIP-G for SDXL."""
    pairs = [(pipe.tokenizer, pipe.text_encoder)]
    if getattr(pipe, "text_encoder_2", None) is not None:
        pairs.append((pipe.tokenizer_2, pipe.text_encoder_2))
    return pairs


class TextConditioner:
    """Turns captions into the UNet's ``encoder_hidden_states`` (and SDXL's ``added_cond_kwargs``)."""

    def __init__(self, pipe, family: str, device: torch.device, cache: bool):
        self.family = model_family(family)
        self.device = device
        pairs = text_pairs(pipe)
        self.tokenizers = [tok for tok, _ in pairs]
        self.encoders = [enc for _, enc in pairs]
        self.cache_enabled = cache
        self._cache: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}

    def _ids(self, tokenizer, captions: list[str]) -> torch.Tensor:
        return tokenizer(
            captions, padding="max_length", max_length=tokenizer.model_max_length, truncation=True,
            return_tensors="pt",
        ).input_ids.to(self.device)

    def _encode(self, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.family.encode_text(self.encoders, [self._ids(tok, captions) for tok in self.tokenizers])

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

    def added_cond_kwargs(self, pooled, buckets: list[tuple[int, int]]) -> dict | None:
        """The UNet's extra conditioning (SDXL's pooled text and size ids), or None (the family's adapter says)."""
        return self.family.added_cond_kwargs(pooled, buckets, self.device)
