"""Text conditioning for every family (the family's adapter encodes), with a cache for when the text encoders are
frozen; with ``model.offload_text_encoders``, every caption and sample prompt encoded before training and the
encoders moved to the CPU for the rest of the run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from trainer.models.family import family as model_family
from trainer.models.family import family_of_pipeline

CPU = torch.device("cpu")


def text_pairs(pipe, family: str | None = None) -> list[tuple]:
    """The (tokenizer, text encoder) pairs ``pipe`` holds, in its family's order (the family of ``pipe``'s class
    when not given): one for SD1.5, CLIP-L then OpenCLIP-G for SDXL."""
    adapter = model_family(family) if family else family_of_pipeline(type(pipe).__name__)
    return [(tok, enc) for tok, enc in adapter.text_pairs(pipe) if tok is not None and enc is not None]


@dataclass(frozen=True)
class ForeseenText:
    """Everything a run will encode: the captions the denoiser is conditioned on (training, validation, the model
    measures) and the sample prompts, batch by batch as the sampler draws them, with their negative prompt."""

    captions: list[str] = field(default_factory=list)
    prompt_batches: list[list[str]] = field(default_factory=list)
    negative: str = ""


class TextConditioner:
    """Turns captions into the denoiser's text conditioning: the hidden states and, for families that take one,
    the pooled embedding. An encoder the pipeline was loaded without stays None (the family fills its place).

    ``offload``: :meth:`encode_up_front` encodes what the run foresees on the device, then the encoders leave it;
    a caption or prompt batch nobody foresaw is encoded on the CPU, where they are, and :attr:`on_unforeseen` is
    told (one line in the run's events), never a crash."""

    def __init__(self, pipe, family: str, device: torch.device, cache: bool, offload: bool = False):
        self.family = model_family(family)
        self.device = device
        pairs = self.family.text_pairs(pipe)
        self.tokenizers = [tok for tok, _ in pairs]
        self.encoders = [enc for _, enc in pairs]
        self.max_lengths = [length or (tok.model_max_length if tok is not None else 0)
                            for length, (tok, _) in zip(self.family.text_max_lengths(pipe), pairs)]
        self.cache_enabled = cache or offload
        self.offload = offload
        self.offloaded = False  # the encoders left the device (encode_up_front)
        self.encoders_device = self.device  # where the encoders compute: the CPU once offloaded
        self.on_unforeseen: Callable[[int, str], None] = lambda count, example: None
        # embeddings of one caption each; once the encoders leave the device they wait on the CPU for their batch
        self._cache: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._store = CPU if offload else device
        self._prompts: dict[tuple[tuple[str, ...], str], dict[str, torch.Tensor]] = {}

    @property
    def modules(self) -> list[torch.nn.Module]:
        """The text encoders that are models (not the stand-in of an encoder the base was loaded without)."""
        return [e for e in self.encoders if isinstance(e, torch.nn.Module)]

    def _ids(self, tokenizer, captions: list[str], max_length: int, device: torch.device):
        return self.family.tokenize(tokenizer, captions, max_length, device)

    def _encode(self, captions: list[str], device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        device = device or self.device
        ids = [None if tok is None else self._ids(tok, captions, n, device)
               for tok, n in zip(self.tokenizers, self.max_lengths)]
        return self.family.encode_text(self.encoders, ids)

    def __call__(self, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor | None]:
        if not self.cache_enabled:
            return self._encode(captions)
        missing = sorted({c for c in captions if c not in self._cache})
        if missing:
            self._fill(missing)
        hidden = torch.stack([self._cache[c][0] for c in captions]).to(self.device)
        # a family with pooled text caches a pooled embedding for every caption
        pooled = None if not self.family.pooled_text else torch.stack([self._cache[c][1] for c in captions]).to(self.device)  # type: ignore[misc]
        return hidden, pooled

    def _fill(self, captions: list[str]) -> None:
        """Encode and cache each caption alone: a text projection's rounding changes with how many rows its batch
        has, so a caption encoded beside others would get other numbers than the same caption alone, and an
        embedding would depend on which captions happened to be first asked for together (before training, or
        after a resume)."""
        if self.offloaded:
            self.on_unforeseen(len(captions), captions[0])
        with torch.no_grad():
            for c in captions:
                hidden, pooled = self._encode([c], self.encoders_device)
                self._cache[c] = (hidden[0].float().to(self._store),
                                  None if pooled is None else pooled[0].float().to(self._store))

    def clear_cache(self) -> None:
        """Forget cached embeddings (after the text encoders changed dtype). Kept when the encoders left the device:
        encoding again would bring them back, so the run goes on with the embeddings of the precision it began in."""
        if not self.offloaded:
            self._cache.clear()

    # ------------------------------------------------------------------------------------- encoded up front

    def encode_up_front(self, foreseen: ForeseenText, autocast, sampler) -> None:
        """Encode ``foreseen`` on the device, under the run's ``autocast`` as training and sampling would: every
        caption, and every sample batch by the sampling pipeline ``sampler``'s own ``encode_prompt``. Then the
        encoders move to the CPU and the device's cache gives their memory back."""
        self._move_encoders(self.device)
        with torch.no_grad(), autocast:
            self._fill(sorted(set(foreseen.captions) - set(self._cache)))
            for batch in foreseen.prompt_batches:
                key = (tuple(batch), foreseen.negative)
                if key not in self._prompts:
                    embeds = self._encode_prompts(sampler, batch, foreseen.negative, self.encoders_device)
                    self._prompts[key] = {k: v.to(CPU) for k, v in embeds.items()}
        self._move_encoders(CPU)
        self.offloaded = True
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _move_encoders(self, device: torch.device) -> None:
        for module in self.modules:
            module.to(device)
        self.encoders_device = device

    def _encode_prompts(self, pipe, prompts: list[str], negative: str, device) -> dict[str, torch.Tensor]:
        # the negative prompt as render_batch gives it to the pipeline: once per prompt, or none
        return self.family.encode_prompts(pipe, list(prompts), [negative] * len(prompts) if negative else None,
                                          device)

    def prompt_kwargs(self, pipe, prompts: list[str], negative: str, device) -> dict[str, Any]:
        """The embeddings ``pipe`` takes in place of ``prompt=prompts`` and ``negative_prompt=negative``, on
        ``device``: the ones encoded up front for exactly this batch, else encoded now on the CPU (and reported)."""
        found = self._prompts.get((tuple(prompts), negative))
        if found is None:
            self.on_unforeseen(len(prompts), prompts[0] if prompts else "")
            found = self._encode_prompts(pipe, prompts, negative, self.encoders_device)
        return {k: v.to(device) for k, v in found.items()}
