"""Base models: the tiny ones (built by ``tiny_models``), the demo base, and real ones from a folder, a single
file or a hub id.

Every path ends in a diffusers pipeline (SD1.5 or SDXL) plus a :class:`BaseInfo` saying what was loaded,
which family it is, and whether it looks distilled (docs/training-guide.md, "Do not train on distilled models":
LoRA training on a few-step distilled base undoes the distillation and blurs the pictures).
"""

from __future__ import annotations

import json
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainer.errors import UserError
from trainer.message import Msg, msg
from trainer.models.base_files import checkpoint_keys
from trainer.models.family import (
    FAMILIES,
    MODEL_CONFIG_DIR,  # noqa: F401 (where tests and bench/ read the shipped configs from)
    chosen_family,
    family_of_checkpoint_keys,
    family_of_pipeline,
)
from trainer.models.family import family as model_family

TINY_BASES = tuple(f"tiny-{name}" for name in FAMILIES)
BUILTIN_BASES = (*TINY_BASES, "demo")  # names, never paths (the repository holds a demo/ folder)
SINGLE_FILE_SUFFIXES = (".safetensors", ".ckpt", ".pt", ".bin")
DEMO_BASE_DIR = Path(__file__).resolve().parents[2] / "demo" / "base"
DEMO_FAMILY = "sd15"  # the demo base (demo/base) is SD1.5-shaped


@dataclass
class BaseInfo:
    source: str  # what the user gave
    kind: str  # tiny | demo | folder | single_file | hub
    family: str  # sd15 | sdxl
    prediction_type: str = "epsilon"
    distilled: bool = False
    distilled_reason: Msg | str = ""  # why it looks distilled ("": it does not)
    warnings: list[Msg] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --------------------------------------------------------------------------------------- base resolving


def classify_base(base: str) -> str:
    """tiny | demo | folder | single_file | hub — from the string alone (and the filesystem)."""
    if base in TINY_BASES or (base.startswith("tiny-") and base.removeprefix("tiny-") in FAMILIES):
        return "tiny"
    if base == "demo":
        return "demo"
    try:
        p = Path(base).expanduser()
        mode = p.stat().st_mode if p.exists() else None
    except (OSError, RuntimeError, ValueError) as e:  # a name too long, ~nobody, a NUL byte
        raise UserError(msg("error.base.unusable", base=base[:200], reason=getattr(e, "strerror", None) or e)) from None
    if mode is not None and stat.S_ISDIR(mode):
        return "folder"
    if mode is not None and stat.S_ISREG(mode):
        if p.suffix.lower() in SINGLE_FILE_SUFFIXES:
            return "single_file"
        raise UserError(msg("error.base.not_checkpoint", path=p))
    if mode is not None:
        raise UserError(msg("error.base.special", path=p, what=_special_file(mode)))
    if p.suffix.lower() in SINGLE_FILE_SUFFIXES or base.startswith((".", "/", "~", "\\")) or ":" in base:
        raise UserError(msg("error.base.missing", path=p))
    if re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", base):
        return "hub"
    raise UserError(msg("error.base.unknown", base=base, builtins=", ".join(BUILTIN_BASES)))


def _special_file(mode: int) -> Msg:
    for test, name in ((stat.S_ISCHR, msg("error.base.char_device")), (stat.S_ISBLK, msg("error.base.block_device")),
                       (stat.S_ISFIFO, msg("error.base.fifo")), (stat.S_ISSOCK, msg("error.base.socket"))):
        if test(mode):
            return name
    return msg("error.base.other")


def _family_from_index(folder: Path) -> str | None:
    index = folder / "model_index.json"
    if not index.is_file():
        return None
    return family_of_pipeline(json.loads(index.read_text(encoding="utf-8")).get("_class_name", "")).name


def _family_from_single_file(path: Path) -> str:
    return family_of_checkpoint_keys(checkpoint_keys(path)).name


def base_config_folder(model_cfg, kind: str) -> Path | None:
    """The folder holding the configs of a demo, folder or single-file base (of ``kind``); None for the others."""
    if kind == "demo":
        return DEMO_BASE_DIR
    if kind == "folder":
        return Path(model_cfg.base).expanduser()
    if kind == "single_file":
        path = Path(model_cfg.base).expanduser()
        chosen = chosen_family(model_cfg.family)
        return single_file_config_dir(path, chosen.name if chosen else _family_from_single_file(path))
    return None


def unet_block_names(model_cfg) -> list[str] | None:
    """The UNet's blocks (``down_blocks.i``, ``mid_block``, ``up_blocks.i``) from its config alone, without
    weights; None where that config is not at hand (hub ids, bases that do not exist: loading reports those)."""
    try:
        kind = classify_base(model_cfg.base)
    except UserError:
        return None
    if kind == "tiny":  # both tiny UNets (build_tiny_pipeline) have two levels and a mid block
        return ["down_blocks.0", "down_blocks.1", "mid_block", "up_blocks.0", "up_blocks.1"]
    folder = base_config_folder(model_cfg, kind)
    if folder is None:
        return None
    try:
        config = json.loads((folder / "unet" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = [f"down_blocks.{i}" for i in range(len(config.get("down_block_types", [])))]
    if config.get("mid_block_type", "UNetMidBlock2DCrossAttn") is not None:
        names.append("mid_block")
    return names + [f"up_blocks.{i}" for i in range(len(config.get("up_block_types", [])))]


def _hub_offline_error(base: str, err: Exception) -> UserError:
    return UserError(msg("error.base.hub_offline", base=base, error=type(err).__name__))


def load_pipeline(model_cfg, torch_dtype: torch.dtype = torch.float32):
    """Load the base pipeline named by ``model_cfg`` (a :class:`trainer.config.schema.ModelConfig`).

    Returns ``(pipe, BaseInfo)``. Errors the user can fix are :class:`UserError`.
    """
    # imported here: that module imports this one
    from trainer.models.distilled import base_warnings, configs_on_disk, detect_distilled

    base = model_cfg.base
    kind = classify_base(base)
    chosen = chosen_family(model_cfg.family)
    family = chosen.name if chosen else None
    if kind == "tiny":
        from trainer.models.tiny import build_tiny_pipeline

        family = family or base.split("-", 1)[1]
        pipe = build_tiny_pipeline(family)
    elif kind == "demo":
        folder = DEMO_BASE_DIR
        if not (folder / "model_index.json").is_file():
            raise UserError(msg("error.base.demo_missing", folder=folder))
        family = DEMO_FAMILY
        pipe = _from_folder(folder, family, torch_dtype)
    elif kind == "folder":
        folder = Path(base).expanduser()
        detected = _family_from_index(folder)
        if detected is None:
            raise UserError(msg("error.base.no_index", folder=folder))
        family = family or detected
        pipe = _from_folder(folder, family, torch_dtype)
    elif kind == "single_file":
        path = Path(base).expanduser()
        family = family or _family_from_single_file(path)
        pipe = _from_single_file(path, family, torch_dtype)
    else:
        pipe, family = _from_hub(base, family, torch_dtype)

    pred = model_cfg.prediction_type
    if pred == "auto":
        pred = model_family(family).prediction_type(pipe)
    info = BaseInfo(source=base, kind=kind, family=family, prediction_type=pred)
    adapter = model_family(family)
    # the files' own configs where there are some, as the plan read them (trainer/models/distilled.py)
    found = None if kind == "tiny" else configs_on_disk(base, kind, adapter)
    configs = found[1] if found else adapter.configs_of(pipe)
    info.distilled, info.distilled_reason = detect_distilled(base, family=family, configs=configs)
    denoiser_config = configs.denoiser if configs.denoiser is not None else dict(adapter.denoiser(pipe).config)
    info.warnings = base_warnings(info.distilled_reason, adapter.distillation_note(denoiser_config, model_cfg))
    if pipe.dtype != torch_dtype:
        pipe.to(dtype=torch_dtype)
    return pipe, info


def _from_folder(folder: Path, family: str, torch_dtype):
    adapter = model_family(family)
    try:
        return adapter.pipeline_class().from_pretrained(str(folder), local_files_only=True, dtype=torch_dtype,
                                                        **adapter.load_kwargs())
    except (OSError, ValueError, KeyError) as e:
        raise UserError(msg("error.base.folder_failed", folder=folder, error=str(e))) from None


def single_file_config_dir(path: Path, family: str) -> Path:
    """A config folder beside the file (``config/`` or ``<stem>.config/``), else the shipped one for its family."""
    for candidate in (path.parent / "config", path.with_suffix("").with_name(path.stem + ".config")):
        if (candidate / "model_index.json").is_file():
            return candidate
    return model_family(family).checkpoint_config_dir(path)


def _from_single_file(path: Path, family: str, torch_dtype):
    adapter = model_family(family)
    config_dir = single_file_config_dir(path, family)
    kwargs: dict[str, Any] = {"dtype": torch_dtype, "config": str(config_dir), "local_files_only": True,
                              **adapter.load_kwargs(), **adapter.single_file_kwargs(path, config_dir, torch_dtype)}
    try:
        return adapter.pipeline_class().from_single_file(str(path), **kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise UserError(msg("error.base.checkpoint_failed", path=path, family=family, config_dir=config_dir,
                            error=str(e).splitlines()[0][:300])) from None


def _from_hub(base: str, family: str | None, torch_dtype):
    from diffusers import DiffusionPipeline

    try:
        pipe = DiffusionPipeline.from_pretrained(base, dtype=torch_dtype)
    except Exception as e:  # huggingface_hub raises many kinds when offline; all mean the same to the user
        raise _hub_offline_error(base, e) from None
    return pipe, family or family_of_pipeline(type(pipe).__name__).name
