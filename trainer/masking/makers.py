"""The mask makers, loaded the way users have them: a local folder or file, or a hub id, on the GPU when there is one.

Each takes upright RGB pictures and gives, per picture, how sure it is that a pixel is the subject (0–1, at the
picture's own size): CLIPSeg (``CIDAS/clipseg-rd64-refined``) reads the subject from words ("a person, a dog"; the
most certain of the phrases counts), a background remover (an ONNX graph: RMBG-1.4, U²-Net, IS-Net, BiRefNet as
rembg and their own repos ship them) takes what stands in front of the background. :func:`load_masker` is the only
way in; ``close()`` frees the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from trainer.caption.models import free_memory, torch_device
from trainer.errors import UserError
from trainer.message import msg

KINDS = ("clipseg", "rembg")

DEFAULT_MODELS = {"clipseg": "CIDAS/clipseg-rd64-refined", "rembg": "briaai/RMBG-1.4"}
"""What each maker loads when no model is named."""

ONNX_FILES = ("model.onnx", "onnx/model.onnx")
"""Where a background remover's graph lies in a folder or hub repo (RMBG-1.4 keeps it under ``onnx/``)."""

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
HALF = ((0.5, 0.5, 0.5), (1.0, 1.0, 1.0))
# Graphs trained on pictures scaled to 0.5 ± 1 rather than ImageNet's statistics, by name (as rembg's sessions do)
_HALF_NAMES = ("rmbg", "isnet")


class Masker(Protocol):
    kind: str
    model: str

    def probabilities(self, images: list[Image.Image], prompt: str) -> list[np.ndarray]:
        """Per picture, float32 (height, width) in [0, 1]: how sure the maker is that each pixel is the subject."""
        ...

    def close(self) -> None:
        ...


def prompts_of(prompt: str) -> list[str]:
    """CLIPSeg's phrases: comma-separated, each read on its own."""
    return [p.strip() for p in prompt.split(",") if p.strip()]


def to_size(prob: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A probability map resized (bilinear) to ``size`` (width, height)."""
    im = Image.fromarray(prob.astype(np.float32), mode="F").resize(size, Image.Resampling.BILINEAR)
    return np.clip(np.asarray(im, dtype=np.float32), 0.0, 1.0)


class ClipSeg:
    """CLIPSeg through transformers: each picture read with each phrase, the most certain phrase per pixel."""

    kind = "clipseg"

    def __init__(self, model: Any, processor: Any, name: str, device: str):
        self.net, self.processor, self.model, self.device = model, processor, name, device

    def probabilities(self, images: list[Image.Image], prompt: str) -> list[np.ndarray]:
        import torch

        phrases = prompts_of(prompt)
        if not phrases:
            raise UserError(msg("mask.error.no_prompt"))
        texts = [p for _ in images for p in phrases]
        pictures = [im for im in images for _ in phrases]
        inputs = self.processor(text=texts, images=pictures, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            logits = self.net(**inputs).logits.float()
        if logits.ndim == 2:  # older transformers squeeze a batch of one
            logits = logits[None]
        probs = torch.sigmoid(logits).reshape(len(images), len(phrases), *logits.shape[-2:]).amax(dim=1)
        return [to_size(p.cpu().numpy(), im.size) for p, im in zip(probs, images)]

    def close(self) -> None:
        self.net = self.processor = None
        free_memory()


class BackgroundRemover:
    """An ONNX salient-object graph: one picture at a time (most are exported with a batch of one), resized to the
    graph's own size, normalised as it was trained; its first output's first map scaled to 0–1 (min to max), as
    rembg and RMBG's own code read it."""

    kind = "rembg"

    def __init__(self, session: Any, name: str, norm: tuple[tuple[float, ...], tuple[float, ...]]):
        self.session, self.model, self.norm = session, name, norm
        shape = session.get_inputs()[0].shape
        height, width = (int(s) if isinstance(s, int) and s > 0 else 1024 for s in shape[2:4])
        self.size = (height, width)

    def probabilities(self, images: list[Image.Image], prompt: str = "") -> list[np.ndarray]:
        mean, std = (np.asarray(v, dtype=np.float32)[:, None, None] for v in self.norm)
        name = self.session.get_inputs()[0].name
        out = []
        for im in images:
            x = np.asarray(im.convert("RGB").resize((self.size[1], self.size[0]), Image.Resampling.BILINEAR), np.float32) / 255.0
            x = (x.transpose(2, 0, 1) - mean) / std
            pred = np.asarray(self.session.run(None, {name: x[None].astype(np.float32)})[0], np.float32)
            pred = pred.reshape(-1, *pred.shape[-2:])[0]
            low, high = float(pred.min()), float(pred.max())
            out.append(to_size((pred - low) / (high - low) if high > low else np.zeros_like(pred), im.size))
        return out

    def close(self) -> None:
        self.session = None
        free_memory()


@dataclass(frozen=True)
class MaskerChoice:
    kind: str
    model: str


def choose(kind: str, model: str = "", prompt: str | None = None) -> MaskerChoice:
    """The maker of ``kind`` and its model (the kind's usual one when none is given). With ``prompt``, a maker that
    needs words to look for (CLIPSeg) and has none is refused here, before a model is loaded."""
    if kind not in KINDS:
        raise UserError(msg("mask.error.kind", kind=kind, kinds=", ".join(KINDS)))
    if kind == "clipseg" and prompt is not None and not prompts_of(prompt):
        raise UserError(msg("mask.error.no_prompt"))
    return MaskerChoice(kind, model.strip() or DEFAULT_MODELS[kind])


def load_masker(choice: MaskerChoice, device: str = "auto") -> Masker:
    """Load the chosen maker. A model that is not there or is not of the chosen kind is a :class:`UserError`
    naming it and what to do."""
    try:
        return _load_clipseg(choice.model, device) if choice.kind == "clipseg" else _load_remover(choice.model, device)
    except UserError:
        raise
    except Exception as e:  # a missing file, a hub refusal, another kind of model: one answer for the user
        raise unreadable(choice.model, choice.kind, e) from None


def _load_clipseg(model: str, device: str) -> ClipSeg:
    from transformers import CLIPSegForImageSegmentation, CLIPSegProcessor

    where = torch_device(device)
    local = Path(model).expanduser()
    source = str(local) if local.exists() else model
    net = CLIPSegForImageSegmentation.from_pretrained(source).to(where).eval()  # type: ignore[arg-type]  # nn.Module.to takes a device name; the hint is narrower
    return ClipSeg(net, CLIPSegProcessor.from_pretrained(source), model, where)


def _graph(model: str) -> Path:
    local = Path(model).expanduser()
    if local.is_file():
        return local
    if local.is_dir():
        for name in ONNX_FILES:
            if (local / name).is_file():
                return local / name
        raise FileNotFoundError(f"no {' or '.join(ONNX_FILES)} in the folder")
    from huggingface_hub import hf_hub_download

    for name in ONNX_FILES[1:]:
        try:
            return Path(hf_hub_download(model, name))
        except Exception:  # the repo keeps it at its root instead
            pass
    return Path(hf_hub_download(model, ONNX_FILES[0]))


def _norm(graph: Path, model: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The graph's normalisation: its ``preprocessor_config.json`` (beside it or one folder up) when there is one,
    else by its name or the name it was asked by."""
    for folder in (graph.parent, graph.parent.parent):
        config = folder / "preprocessor_config.json"
        if config.is_file():
            c = json.loads(config.read_text(encoding="utf-8"))
            if "image_mean" in c and "image_std" in c:
                return tuple(c["image_mean"]), tuple(c["image_std"])
    where = f"{model}/{graph.parent.name}/{graph.name}".lower()
    return HALF if any(n in where for n in _HALF_NAMES) else IMAGENET


def _load_remover(model: str, device: str) -> BackgroundRemover:
    import onnxruntime as ort

    from trainer.caption.tagger import providers

    graph = _graph(model)
    use = providers() if device in ("auto", "cuda") else ["CPUExecutionProvider"]
    session = ort.InferenceSession(str(graph), providers=use)
    shape = session.get_inputs()[0].shape
    if len(shape) != 4 or shape[1] not in (3, "3"):
        raise ValueError(f"its input is {shape}, not one RGB picture (1, 3, height, width)")
    return BackgroundRemover(session, model, _norm(graph, model))


def unreadable(model: str, kind: str, error: BaseException) -> UserError:
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
    local = Path(model).expanduser().exists()
    return UserError(msg("mask.error.model_local" if local else "mask.error.model_hub",
                         model=model, kind=msg(f"mask.kind.{kind}"), reason=reason))
