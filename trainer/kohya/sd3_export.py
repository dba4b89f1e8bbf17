"""The SD3 arguments an export writes so ``sd3_train_network.py`` trains what ours trains: where it reads the model
and its three text encoders, the flow-matching timesteps (logit-normal, the base's shift), T5-XXL's tokens, text
encoder caching, and the per-layer-type dims that keep ``networks.lora_sd3`` to our ``lora.targets``.

sd-scripts reads SD3.5 only from single ``.safetensors`` files in the original layout (``library/sd3_utils.py``:
``model.diffusion_model.*`` and ``first_stage_model.*``, and ``text_encoders.clip_l|clip_g|t5xxl.*`` when the file
holds them; each encoder missing from it must be given by its own path, or loading fails)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.config.schema import Config
from trainer.kohya.flow import LOGIT_MEAN, LOGIT_STD, cache_text_encoders, placeholders, te_placeholder
from trainer.kohya.report import Report
from trainer.kohya.sd3 import TARGET_DIMS, TE_FILES, base_shift
from trainer.message import msg
from trainer.models.families.sd3 import T5_TOKENS

MODEL_PLACEHOLDER = "<path to the SD3.5 model .safetensors>"


def encoders_in(path: Path) -> set[str] | None:
    """The text encoders (of :data:`TE_FILES`) a single .safetensors file holds, from its header alone; None when
    the header cannot be read."""
    try:
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 0 < size < 100_000_000:
                return None
            names = json.loads(f.read(size))
    except (OSError, ValueError):
        return None
    if not isinstance(names, dict):
        return None
    return {te for te in TE_FILES if any(k.startswith(f"text_encoders.{te}.") for k in names)}


def sd3_args(cfg: Config, args: dict[str, Any], rep: Report) -> None:
    """Add the SD3 arguments to ``args`` (sd-scripts' config file) and say what each is in ``rep``."""
    _base(cfg, args, rep)
    shift = base_shift(cfg.model.base)
    args.update(weighting_scheme="logit_normal", logit_mean=LOGIT_MEAN, logit_std=LOGIT_STD, training_shift=shift,
                t5xxl_max_token_length=T5_TOKENS)
    rep.mapped("model.family", "sd3", "weighting_scheme", "logit_normal", msg("kohya.sd3.export.timesteps"))
    rep.mapped("model.family", "sd3", "logit_mean, logit_std", [LOGIT_MEAN, LOGIT_STD])
    rep.mapped("model.family", "sd3", "training_shift", shift, msg("kohya.sd3.export.shift"))
    rep.mapped("model.family", "sd3", "t5xxl_max_token_length", T5_TOKENS, msg("kohya.sd3.export.t5_tokens"))
    cache_text_encoders(cfg, args, rep, msg("kohya.sd3.export.no_cache"))
    targets = cfg.lora.targets
    dims = [f"{d}=0" for d in TARGET_DIMS.get(targets, TARGET_DIMS["attn"])]
    args["network_args"] = [*args.get("network_args", []), *dims]
    if targets in TARGET_DIMS:
        rep.mapped("lora.targets", targets, "network_args", dims, msg("kohya.sd3.export.targets"))
    else:
        rep.changed("lora.targets", targets, "network_args", dims, msg("kohya.sd3.export.cross_kv"))


def _base(cfg: Config, args: dict[str, Any], rep: Report) -> None:
    """pretrained_model_name_or_path and the text encoders' files; a placeholder for each the user must fill in."""
    base = cfg.model.base
    path = Path(base).expanduser()
    rep.entries[:] = [e for e in rep.entries if e["key"] != "model.base"]  # said again below, with a note
    if path.suffix.lower() == ".safetensors" and not path.is_dir():
        inside = encoders_in(path) if path.is_file() else None
        if inside is None:
            rep.mapped("model.base", base, "pretrained_model_name_or_path", base, msg("kohya.sd3.export.te_unknown"))
            return
        missing = [te for te in TE_FILES if te not in inside]
        rep.mapped("model.base", base, "pretrained_model_name_or_path", base,
                   None if missing else msg("kohya.sd3.export.te_in_file"))
        for te in missing:
            args[te] = te_placeholder(te)
            rep.changed("model.base", base, te, args[te], msg("kohya.sd3.export.te_missing", name=te, file=path.name))
        return
    # a diffusers folder, a hub id or a name of ours: sd-scripts reads none of them
    placeholders(args, rep, base, MODEL_PLACEHOLDER, msg("kohya.sd3.export.single_file", base=base), TE_FILES,
                 msg("kohya.sd3.export.te_files"))
