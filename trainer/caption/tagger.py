"""The WD14 tagger family (SmilingWolf's ``wd-vit-tagger-v3``, ``wd-eva02-large-tagger-v3``, ``wd-swinv2-...``):
an ONNX graph run by ``onnxruntime`` and its ``selected_tags.csv``.

The layout is the one SmilingWolf's own demo and kohya's ``tag_images_by_wd14_tagger.py`` use: one input of shape
(batch, size, size, 3), float32 0–255 in **BGR** order, the picture padded to a white square and resized to the
graph's own size (448 for the v3 models: read from the graph, never assumed); one output of per-tag probabilities.
The CSV's ``category`` says what a tag is: 0 general, 4 character name, 9 rating (never written).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from trainer.caption.models import free_memory, unreadable

MODEL_FILE = "model.onnx"
TAGS_FILE = "selected_tags.csv"
GENERAL, CHARACTER, RATING = 0, 4, 9

# Tags that are faces drawn with underscores: replacing "_" by a space would break them (kohya keeps the same list).
KAOMOJI = frozenset({"0_0", "(o)_(o)", "+_+", "+_-", "._.", "<o>_<o>", "<|>_<|>", "=_=", ">_<", "3_3", "6_9",
                     ">_o", "@_@", "^_^", "o_o", "u_u", "x_x", "|_|", "||_||"})


@dataclass(frozen=True)
class Tag:
    name: str
    category: int


def read_tags(path: Path) -> list[Tag]:
    """``selected_tags.csv`` (tag_id,name,category,count) as tags in the model's output order, underscores made
    spaces as prompts write them."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [Tag(r["name"] if r["name"] in KAOMOJI else r["name"].replace("_", " "), int(r["category"])) for r in rows]


def square_bgr(image: Image.Image, size: int) -> np.ndarray:
    """The picture as the tagger reads it: padded to a white square (nothing cropped), resized, BGR, 0–255."""
    image = image.convert("RGB")
    side = max(image.size)
    canvas = Image.new("RGB", (side, side), (255, 255, 255))
    canvas.paste(image, ((side - image.width) // 2, (side - image.height) // 2))
    if side != size:
        canvas = canvas.resize((size, size), Image.Resampling.BICUBIC)
    return np.asarray(canvas, dtype=np.float32)[:, :, ::-1]


class Tagger:
    """A loaded WD14 tagger: general tags at or above ``general_threshold``, character names at or above
    ``character_threshold``; names first (they say who), then general tags by probability."""

    kind = "tagger"

    def __init__(self, session: Any, tags: list[Tag], model: str, general_threshold: float,
                 character_threshold: float):
        self.session, self.tags, self.model = session, tags, model
        self.general_threshold, self.character_threshold = general_threshold, character_threshold
        inp = session.get_inputs()[0]
        self.input_name, self.size = inp.name, int(inp.shape[1])

    def probabilities(self, images: list[Image.Image]) -> np.ndarray:
        batch = np.ascontiguousarray(np.stack([square_bgr(im, self.size) for im in images]))
        out = self.session.run(None, {self.input_name: batch})[0]
        return np.asarray(out, dtype=np.float32)

    def caption(self, images: list[Image.Image]) -> list[str]:
        return [self.tags_of(p) for p in self.probabilities(images)]

    def tags_of(self, probs: np.ndarray) -> str:
        names = [(p, t.name) for t, p in zip(self.tags, probs) if t.category == CHARACTER and p >= self.character_threshold]
        general = [(p, t.name) for t, p in zip(self.tags, probs) if t.category == GENERAL and p >= self.general_threshold]
        return ", ".join(name for _, name in sorted(names, reverse=True) + sorted(general, reverse=True))

    def close(self) -> None:
        self.session = None
        free_memory()


def _files(model: str) -> tuple[Path, Path]:
    """The graph and the tag list: from a local folder, or downloaded (and cached) from the hub repo ``model``."""
    local = Path(model).expanduser()
    if local.is_dir():
        return local / MODEL_FILE, local / TAGS_FILE
    from huggingface_hub import hf_hub_download

    return Path(hf_hub_download(model, MODEL_FILE)), Path(hf_hub_download(model, TAGS_FILE))


def providers() -> list[str]:
    """CUDA first when this onnxruntime has it (the ``onnxruntime-gpu`` build), the CPU always as the fallback."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in available]


def load_tagger(model: str, general_threshold: float = 0.35, character_threshold: float = 0.85,
                device: str = "auto") -> Tagger:
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise unreadable(model, "tagger", e) from None
    try:
        graph, tag_file = _files(model)
        tags = read_tags(tag_file)
        use = providers() if device in ("auto", "cuda") else ["CPUExecutionProvider"]
        session = ort.InferenceSession(str(graph), providers=use)
    except Exception as e:  # a missing file, a hub refusal, a corrupt graph or CSV: all one answer for the user
        raise unreadable(model, "tagger", e) from None
    n_out = session.get_outputs()[0].shape[-1]
    if isinstance(n_out, int) and n_out != len(tags):
        raise unreadable(model, "tagger", ValueError(f"{len(tags)} tags in {TAGS_FILE}, {n_out} model outputs"))
    return Tagger(session, tags, model, general_threshold, character_threshold)
