"""An optional picture judge for any subject: CLIP or SigLIP image embeddings (``measure.judge``: a local folder
or a hub id, as users have them; off unless set).

Each reading is against the base model's picture of the same prompt and seed, so no number needs a threshold of
the judge's own scale:

- ``likeness`` (trigger pictures): how much closer the picture came to the training pictures' mean embedding than
  the base model's picture was, as a share of the way there (0: no closer, 1: as close as the data itself);
- ``adherence`` (trigger pictures): the picture's agreement with its prompt (the trigger taken out) against the
  base model's picture's, capped at 1 (a LoRA that keeps the prompt reads 1);
- ``leakage`` (no-trigger pictures): how far the picture's embedding moved from the base model's picture's
  (1 − cosine, scaled so that two unrelated pictures read about 1).

The judge runs where the doctor reads the pictures (Review, the diagnosis), on the GPU when there is one, and its
model is kept while the same one is asked for again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from trainer.config.schema import Config
from trainer.doctor.judges import PictureJudge, SamplePicture, register_judge

UNRELATED_DISTANCE = 0.5  # 1 - cosine of two unrelated pictures' embeddings, about: leakage 1 there
DATA_PICTURES = 32  # the training pictures' mean embedding is taken over at most this many
CLIP_JUDGE = "clip"  # the judge's registered name: what a run's readings say read them


@functools.lru_cache(maxsize=1)
def load_judge(name: str, device: str = "auto") -> tuple[Any, Any, str]:
    """The CLIP or SigLIP model and its processor from a local folder or a hub id (model, processor, device)."""
    import torch
    from transformers import AutoModel, AutoProcessor

    from trainer.errors import UserError
    from trainer.message import msg

    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    try:
        model = AutoModel.from_pretrained(name).to(dev).eval()
        processor = AutoProcessor.from_pretrained(name)
    except Exception as e:  # a user's files fail in the loaders' many ways (a cut-short download: SafetensorError)
        reason = (str(e).splitlines() or [type(e).__name__])[0]
        raise UserError(msg("error.judge.load", name=name, reason=reason)) from None
    if not hasattr(model, "get_image_features") or not hasattr(model, "get_text_features"):
        raise UserError(msg("error.judge.kind", name=name, kind=type(model).__name__))
    return model, processor, dev


class Embedder:
    """Unit-length image and text embeddings of one judge model, each picture embedded once."""

    def __init__(self, name: str):
        self.model, self.processor, self.device = load_judge(name)
        self._images: dict[bytes, np.ndarray] = {}

    def image(self, picture: np.ndarray) -> np.ndarray:
        key = picture.tobytes() + bytes(str(picture.shape), "ascii")
        if key not in self._images:
            import torch
            from PIL import Image

            inputs = self.processor(images=[Image.fromarray(picture)], return_tensors="pt").to(self.device)
            with torch.no_grad():
                out = self.model.get_image_features(**inputs)
            self._images[key] = _unit(_tensor(out))
        return self._images[key]

    def text(self, text: str) -> np.ndarray:
        import torch

        inputs = self.processor(text=[text], return_tensors="pt", padding="max_length", truncation=True).to(self.device)
        with torch.no_grad():
            out = self.model.get_text_features(**inputs)
        return _unit(_tensor(out))


def _tensor(out: Any) -> np.ndarray:
    """transformers returns the features as a tensor, or (newer versions) an output holding ``pooler_output``."""
    t = out if hasattr(out, "detach") else getattr(out, "pooler_output", None)
    if t is None:
        t = out[0]
    return t.detach().float().cpu().numpy()[0]


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _data_embedding(embed: Embedder, config: Config) -> np.ndarray | None:
    from trainer.doctor.pictures import picture_array, training_pictures

    files = training_pictures(config, DATA_PICTURES)
    if not files:
        return None
    return _unit(np.mean([embed.image(picture_array(p)) for p in files], axis=0))


def clip_reader(config: Config, base_pictures: list[SamplePicture]) -> Callable[[SamplePicture], dict[str, float]] | None:
    """The judge's reader for a run whose ``measure.judge`` names a model, else None."""
    if not config.measure.judge:
        return None
    from trainer.data.batches import without_trigger

    embed = Embedder(config.measure.judge)
    data = _data_embedding(embed, config)
    trigger = config.dataset.trigger

    def read(p: SamplePicture) -> dict[str, float]:
        now, base = embed.image(p.image), embed.image(p.base_image)
        if p.record.get("kind") == "no_trigger":
            return {"leakage": float(np.clip((1.0 - now @ base) / UNRELATED_DISTANCE, 0.0, 1.0))}
        out: dict[str, float] = {}
        if data is not None:
            was = float(base @ data)
            out["likeness"] = float(np.clip((float(now @ data) - was) / max(1.0 - was, 1e-6), 0.0, 1.0))
        asked = without_trigger(p.record.get("prompt", ""), trigger)
        if asked:
            text = embed.text(asked)
            base_fit = float(base @ text)
            out["adherence"] = float(np.clip(float(now @ text) / base_fit, 0.0, 1.0)) if base_fit > 0 else 1.0
        return out

    return read


# a judge whose lines were not measured against what the pictures show on this machine: moderate evidence
register_judge(PictureJudge(CLIP_JUDGE, clip_reader, strength="moderate"))
