"""Is the base distilled? Read from its own configs, without its weights, so the plan says what Start will.

Each family holds one rule (:meth:`~trainer.models.family.ModelFamily.distilled_reason`) over a
:class:`~trainer.models.base_files.BaseConfigs`. Start judges the configs of the base it loaded; the plan step and
``python -m trainer plan`` judge the same files before anything is loaded (:func:`configs_on_disk`):

- a diffusers folder: ``model_index.json``, ``scheduler/scheduler_config.json`` and the denoiser's ``config.json``;
- a single file: its header's own metadata, and the config folder it loads with (beside it, or the family's shipped
  one, which may itself be chosen by that metadata: Z-Image Turbo's);
- a hub id: those files in the local Hugging Face cache, never downloaded. Not there: only its name is checked, and
  the plan says so (:attr:`BaseCheck.unread`).

Start reads the files too wherever it has them (a folder, a single file, a hub id it just downloaded), not the
loaded models' configs: a loaded model's ``_name_or_path`` is where this run loaded it from, while the file's is what
a saved copy recorded of where it came from, and the plan can only see the file's.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.message import Msg, msg
from trainer.models.base import DEMO_BASE_DIR, DEMO_FAMILY, classify_base, single_file_config_dir
from trainer.models.base_files import BaseConfigs, checkpoint_keys, checkpoint_metadata, distilled_word
from trainer.models.family import ModelFamily, chosen_family, family_of_checkpoint_keys, family_of_pipeline
from trainer.models.family import family as model_family


def detect_distilled(source: str, pipe=None, family: str | None = None,
                     configs: BaseConfigs | None = None) -> tuple[bool, Msg | str]:
    """Whether the base looks distilled, and why: a distilled word in its name (turbo, LCM, lightning, hyper,
    schnell), else its family's rule over its configs: ``configs`` as read from its files, or those of a loaded
    ``pipe``. Neither given: the name alone."""
    word = distilled_word(source)
    if word:
        return True, msg("base.distilled_name", word=word)
    if configs is None and pipe is not None:
        configs = (model_family(family) if family else family_of_pipeline(type(pipe).__name__)).configs_of(pipe)
    if configs is not None:
        adapter = model_family(family) if family else family_of_pipeline(configs.pipeline)
        reason = adapter.distilled_reason(configs)
        if reason:
            return True, reason
    return False, ""


def base_warnings(reason: Msg | str, note: Msg | None) -> list[Msg]:
    """What a run says of its base as it starts (its ``distilled_base`` alerts): that it looks distilled (when there
    is a ``reason``), and the family's ``note`` on a distillation training keeps (FLUX.1-dev's guidance)."""
    return [*([msg("base.distilled", reason=reason)] if reason else []), *([note] if note is not None else [])]


# ------------------------------------------------------------------------------------- reading the files


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _configs(read: Callable[[str], dict[str, Any] | None], chosen: ModelFamily | None,
             metadata: dict[str, str] | None = None) -> tuple[ModelFamily, BaseConfigs] | None:
    """The family and configs of a diffusers layout whose files ``read`` gives (by their path inside it); None
    without ``model_index.json`` when no family was chosen (Start refuses such a folder itself)."""
    index = read("model_index.json")
    if index is None and chosen is None:
        return None
    adapter = chosen or family_of_pipeline(str((index or {}).get("_class_name", "")))
    scheduler = read("scheduler/scheduler_config.json")
    entry = (index or {}).get("scheduler")  # ["diffusers", class]: the class a pipeline loads it as
    listed = str(entry[1]) if isinstance(entry, list) and len(entry) == 2 and entry[1] else ""
    return adapter, BaseConfigs(
        pipeline=str((index or {}).get("_class_name", "")),
        scheduler_class=listed or str((scheduler or {}).get("_class_name", "")),
        scheduler=scheduler, denoiser=read(f"{adapter.denoiser_component}/config.json"), metadata=metadata or {})


def _in_folder(folder: Path) -> Callable[[str], dict[str, Any] | None]:
    return lambda name: _read_json(folder / name)


def _in_hub_cache(repo_id: str) -> Callable[[str], dict[str, Any] | None]:
    """A hub id's files as the local Hugging Face cache holds them (never downloaded)."""
    from huggingface_hub import try_to_load_from_cache

    def read(name: str) -> dict[str, Any] | None:
        found = try_to_load_from_cache(repo_id, name)
        return _read_json(Path(found)) if isinstance(found, str) else None

    return read


@functools.cache
def _tiny_configs(family: str) -> BaseConfigs:
    import torch

    from trainer.models.tiny import build_tiny_pipeline

    with torch.device("meta"):  # the configs without the weights
        pipe = build_tiny_pipeline(family)
    return model_family(family).configs_of(pipe)


def configs_on_disk(base: str, kind: str, chosen: ModelFamily | None) -> tuple[ModelFamily, BaseConfigs] | None:
    """The family and own configs of ``base`` (classified as ``kind``), from its files alone; None where there are
    none to read (a hub id not in the local cache, a folder without ``model_index.json``, an unreadable file)."""
    from safetensors import SafetensorError

    if kind == "tiny":
        adapter = chosen or model_family(base.split("-", 1)[1])
        return adapter, _tiny_configs(adapter.name)
    if kind == "demo":
        return _configs(_in_folder(DEMO_BASE_DIR), model_family(DEMO_FAMILY))
    if kind == "folder":
        return _configs(_in_folder(Path(base).expanduser()), chosen)
    if kind == "single_file":
        path = Path(base).expanduser()
        try:
            adapter = chosen or family_of_checkpoint_keys(checkpoint_keys(path))
            metadata = checkpoint_metadata(path)
            config_dir = single_file_config_dir(path, adapter.name)
        except (OSError, ValueError, SafetensorError):
            return None  # Start says what is wrong with the file
        return _configs(_in_folder(config_dir), adapter, metadata)
    if kind == "hub":
        read = _in_hub_cache(base)
        return _configs(read, chosen) if read("model_index.json") is not None else None
    return None


# ---------------------------------------------------------------------------------------- the plan's check


@dataclass
class BaseCheck:
    """What Start will say of the base, read from its files before anything is loaded."""

    distilled: bool = False
    reason: Msg | str = ""
    refusal: Msg | None = None
    """Start refuses the base with this (it looks distilled and ``model.allow_distilled`` is off)."""
    warnings: list[Msg] = field(default_factory=list)
    """What the run says of the base as it starts (:func:`base_warnings`)."""
    unread: Msg | None = None
    """Only the name could be checked: a hub id not in the local cache (Start reads its configs once downloaded)."""

    @property
    def messages(self) -> list[Msg]:
        return [m for m in (self.refusal, *self.warnings, self.unread) if m is not None]

    def to_json(self) -> dict[str, Any]:
        return {"distilled": self.distilled, "refused": self.refusal is not None,
                "reason": self.reason.to_json() if isinstance(self.reason, Msg) else self.reason,
                "messages": [m.to_json() for m in self.messages]}


def distillation_check(model_cfg) -> BaseCheck:
    """What Start will say of ``model_cfg``'s base (a :class:`trainer.config.schema.ModelConfig`), from its files
    alone: the refusal of a distilled base, or the warnings the run will give. A base that cannot be classified
    raises the :class:`~trainer.errors.UserError` Start would."""
    base = model_cfg.base
    kind = classify_base(base)
    found = configs_on_disk(base, kind, chosen_family(model_cfg.family))
    adapter, configs = found if found else (None, None)
    distilled, reason = detect_distilled(base, family=adapter.name if adapter else None, configs=configs)
    if distilled and not model_cfg.allow_distilled:
        return BaseCheck(True, reason, refusal=msg("error.train.distilled", base=base, reason=reason))
    note = (adapter.distillation_note(configs.denoiser, model_cfg)
            if adapter is not None and configs is not None and configs.denoiser is not None else None)
    unread = msg("base.configs_unread", base=base) if found is None and kind == "hub" else None
    return BaseCheck(distilled, reason, warnings=base_warnings(reason if distilled else "", note), unread=unread)
