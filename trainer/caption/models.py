"""The captioners, loaded the way users have them: a local folder or a hub id, on the GPU when there is one.

Every captioner takes a batch of upright RGB pictures and gives one caption each: comma-separated tags (the
tagger) or a sentence (Florence-2, BLIP). :func:`load_captioner` is the only way in; ``close()`` frees the model
(a captioner next to training would otherwise hold gigabytes of GPU memory for nothing).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from PIL import Image

from trainer.errors import UserError
from trainer.message import msg

KINDS = ("tagger", "florence2", "blip")

DEFAULT_MODELS = {
    "tagger": "SmilingWolf/wd-vit-tagger-v3",
    "florence2": "florence-community/Florence-2-base",
    "blip": "Salesforce/blip-image-captioning-large",
}
"""What each captioner loads when no model is named: the smaller, well-known model of its family. Florence-2 comes
from ``florence-community`` (the weights in transformers' own Florence-2 classes, no remote code)."""

# Words in a base model's name that mean it draws anime or illustration, whose captions are booru tags.
_TAG_BASES = ("anime", "illustrious", "noob", "pony", "animagine", "waifu", "booru", "kohaku", "counterfeit")


class Captioner(Protocol):
    kind: str
    model: str

    def caption(self, images: list[Image.Image]) -> list[str]:
        """One caption per picture, in order."""
        ...

    def close(self) -> None:
        """Free the model's memory."""
        ...


@dataclass(frozen=True)
class CaptionerChoice:
    """Which captioner to load and how: what ``caption.*`` settings resolve to."""

    kind: str
    model: str
    general_threshold: float = 0.35
    character_threshold: float = 0.85


def choose(kind: str, model: str = "", base: str = "", general_threshold: float = 0.35,
           character_threshold: float = 0.85) -> CaptionerChoice:
    """The captioner for settings ``caption.captioner``/``caption.model``: "auto" picks the tagger for a base whose
    name says anime or illustration (its prompts are booru tags) and Florence-2 for any other (sentences)."""
    if kind == "auto":
        kind = "tagger" if any(w in base.lower() for w in _TAG_BASES) else "florence2"
    if kind not in KINDS:
        raise UserError(msg("caption.error.kind", kind=kind, kinds=", ".join(KINDS)))
    return CaptionerChoice(kind, model.strip() or DEFAULT_MODELS[kind], general_threshold, character_threshold)


def load_captioner(choice: CaptionerChoice, device: str = "auto") -> Captioner:
    """Load the chosen captioner. A model that is not there or is not of the chosen kind is a :class:`UserError`
    naming it and what to do."""
    if choice.kind == "tagger":
        from trainer.caption.tagger import load_tagger

        return load_tagger(choice.model, choice.general_threshold, choice.character_threshold, device)
    from trainer.caption.vlm import load_blip, load_florence2

    return (load_florence2 if choice.kind == "florence2" else load_blip)(choice.model, device)


def torch_device(device: str = "auto") -> str:
    """"cuda" when there is a GPU (and ``device`` allows it), else "cpu". MPS is left out: Florence-2's vision
    tower has ops MPS lacks, and a captioner is quick enough on a Mac's CPU."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def unreadable(model: str, kind: str, error: BaseException) -> UserError:
    """The one-line error for a model that would not load: local folder missing a file, hub id unknown or offline."""
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    local = Path(model).expanduser().exists()
    return UserError(msg("caption.error.model_local" if local else "caption.error.model_hub",
                         model=model, kind=msg(f"caption.kind.{kind}"), reason=reason))


def free_memory() -> None:
    """Give a freed model's memory back: Python's objects first, then the CUDA cache."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # the tagger runs without torch
        pass
