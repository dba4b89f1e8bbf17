"""A base model's files, read without its weights: a single ``.safetensors`` file's tensor names and metadata
(which family, which size, is T5 inside, is it distilled), and the configs a family's distillation rule reads
(:class:`BaseConfigs`, from a loaded pipeline or from the files alone).

Nothing here imports torch or diffusers at import time.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.message import Msg, msg

DISTILLED_WORDS = ("turbo", "lcm", "lightning", "hyper", "schnell")  # in a name or config: a distilled model


def distilled_word(text: str) -> str | None:
    """The first distilled word (turbo, lcm, …) that stands as a word of its own in ``text``, any case:
    ``sdxl-turbo``, ``LCM_Dreamshaper`` and ``Hyper-SD`` have one; ``hyperrealism`` and ``turbocharged`` do not."""
    lowered = text.lower()
    return next((w for w in DISTILLED_WORDS if re.search(rf"(^|[^a-z]){w}([^a-z]|$)", lowered)), None)


@dataclass(frozen=True)
class BaseConfigs:
    """A base's own configs, read without its weights: what a family's :meth:`ModelFamily.distilled_reason` judges.
    The same object comes from a loaded pipeline or from the files alone (the plan), so a rule reads them one way.
    A part that could not be read is None, and a rule that needs it says nothing."""

    pipeline: str = ""  # the pipeline class (model_index.json's _class_name)
    scheduler_class: str = ""  # the class it loads as: model_index.json's entry, else its config's _class_name
    scheduler: dict[str, Any] | None = None  # scheduler/scheduler_config.json
    denoiser: dict[str, Any] | None = None  # unet/ or transformer/config.json
    metadata: dict[str, str] = field(default_factory=dict)  # a single .safetensors file's own header metadata


def metadata_distilled_word(metadata: Mapping[str, str]) -> tuple[str, str] | None:
    """(key, word): the first distilled word in a single file's own metadata (``modelspec.title``, …), its embedded
    thumbnail passed over (a picture's base64 holds any short word by chance)."""
    for key, value in metadata.items():
        if key.endswith("thumbnail") or str(value).startswith("data:"):
            continue
        word = distilled_word(f"{key} {value}")
        if word:
            return key, word
    return None


def recorded_distilled_word(configs: BaseConfigs, denoiser_part: str) -> Msg | None:
    """A distilled word in what a base's files record of it: the name its denoiser's or scheduler's config was
    loaded from when that copy was saved (``_name_or_path``: diffusers writes it), or a single file's metadata."""
    for part, config in ((denoiser_part, configs.denoiser), ("scheduler", configs.scheduler)):
        recorded = str((config or {}).get("_name_or_path") or "")
        word = distilled_word(recorded)
        if word:
            return msg("base.distilled_config", part=part, word=word, name=recorded)
    found = metadata_distilled_word(configs.metadata)
    if found:
        return msg("base.distilled_metadata", key=found[0], word=found[1])
    return None


def checkpoint_keys(path: Path) -> frozenset[str]:
    """The tensor names of a single-file checkpoint (a ``.safetensors`` file's header; empty for other formats),
    read once per version of the file: telling the family, the model size and whether T5 is inside all ask."""
    return _header(path)[0]


def checkpoint_metadata(path: Path) -> dict[str, str]:
    """A single-file checkpoint's own metadata (a ``.safetensors`` file's header ``__metadata__``: ``modelspec.title``,
    …; empty for other formats or without one): is it a distilled model, asks the base's check."""
    return dict(_header(path)[1])


def _header(path: Path) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    path = Path(path)
    if path.suffix.lower() != ".safetensors":
        return frozenset(), ()
    stat = path.stat()
    return _read_header(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_header(path: str, mtime_ns: int, size: int) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """The tensor names and the metadata of a ``.safetensors`` file, read once per version of the file."""
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        return frozenset(f.keys()), tuple((f.metadata() or {}).items())
