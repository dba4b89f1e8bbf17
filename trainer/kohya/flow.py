"""What the kohya imports and exports of the two flow-matching families with settings of their own share: SD3.5
(:mod:`trainer.kohya.sd3`, :mod:`trainer.kohya.sd3_export`) and Flux.1 (:mod:`trainer.kohya.flux`,
:mod:`trainer.kohya.flux_export`). Which of them a config is; the training shift ours draws its noise levels with;
a setting ours holds at one value; the per-layer-type dims of their network modules; the keys one family's config
saves for the other (the kohya_ss GUI saves every field); the text encoders' cache and the file placeholders of an
export.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import UserError
from trainer.kohya.mapping import BY_GUI, BY_SD, Row, as_bool, as_float, as_int, is_neutral
from trainer.message import Msg, msg

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.kohya.importer import Importer
    from trainer.kohya.report import Report

SD3_MODULE = "networks.lora_sd3"
FLUX_MODULE = "networks.lora_flux"
LOGIT_MEAN, LOGIT_STD = 0.0, 1.0
"""FlowMatchSchedule's logit-normal timestep draw (trainer/models/families/noise.py; a test keeps them equal)."""
N_MMAP = msg("kohya.sd3.row.mmap")
N_CACHE_TO_DISK = msg("kohya.sd3.row.cache_to_disk")


def _checked(data: dict[str, Any], key: str) -> bool:
    try:
        return as_bool(data.get(key, False))
    except ValueError:
        return False


def family_of(data: dict[str, Any]) -> str | None:
    """"flux", "sd3" or None (a UNet family). The kohya_ss GUI's checkboxes (it runs flux_train_network.py before
    sd3_train_network.py when both are on), or LoRA_type "Flux1"; sd-scripts' network module; an sd-scripts TOML
    that names a T5-XXL without SD3's module is for flux_train_network.py (train_network.py has no T5-XXL)."""
    module = str(data.get("network_module", ""))
    if _checked(data, "flux1_checkbox") or str(data.get("LoRA_type", "")).startswith("Flux1") \
            or module.startswith(FLUX_MODULE):
        return "flux"
    if _checked(data, "sd3_checkbox") or module.startswith(SD3_MODULE):
        return "sd3"
    gui = "flux1_checkbox" in data or "sd3_checkbox" in data
    return "flux" if not gui and not is_neutral(data.get("t5xxl")) else None


def own_table(data: dict[str, Any], kind: str) -> dict[str, Row]:
    """The rows of the config's own family (SD3.5's or Flux.1's) by the kohya_ss GUI's or sd-scripts' key; {}
    for a UNet family."""
    from trainer.kohya import flux, sd3

    own = {"flux": flux, "sd3": sd3}.get(family_of(data) or "")
    return own.TABLES[kind] if own else {}


def te_cache_gui_key(data: dict[str, Any]) -> str:
    """The kohya_ss GUI's box for cache_text_encoder_outputs it passes for this config's family."""
    return {"flux": "flux1_", "sd3": "sd3_"}.get(family_of(data) or "", "sdxl_") + "cache_text_encoder_outputs"


def others(imp: Importer, table: dict[str, Row], note: Callable[[str], Msg | None]) -> None:
    """A family's own keys in a config of another family (the kohya_ss GUI saves them all), not read: each
    reported with ``note(key)``, unless the config's own family reads it too."""
    skip = BY_GUI if imp.kind == "gui" else BY_SD
    own = own_table(imp.src, imp.kind)
    for key in [k for k in imp.src if k in table and k not in skip and k not in own and k not in imp.done]:
        imp.report.unsupported(key, imp.src[key], note(key))
        imp.done.add(key)


def put_defaults(imp: Importer, defaults: dict[str, Any]) -> None:
    """sd-scripts' defaults (or the GUI's) for what the config leaves out, listed as such."""
    for key, value in defaults.items():
        if key not in imp.src:
            imp.src[key] = value
            imp.report.defaulted.append(key)


def take_family(imp: Importer, name: str, key: str, shown: str, notes: dict[str, Msg]) -> None:
    """model.family ``name``, read from ``key`` (``shown`` when the config leaves it out), and the shared keys
    whose meaning the family changes, each with its note."""
    imp.values["model.family"] = name
    imp.report.mapped(key, imp.src.get(key, shown), "model.family", name)
    for k, note in notes.items():
        if k in imp.src:
            imp.report.unsupported(k, imp.src[k], note)
            imp.done.add(k)


def base_shift(family_name: str, base: str, follow_paths: bool = True) -> float:
    """The shift ours draws the training noise levels with: the base's scheduler's (a diffusers folder's own, or
    the family's shipped config, which single files and hub ids load with). A scheduler that shifts by the
    picture's size (``use_dynamic_shifting``, FLUX.1-dev's) does so only when sampling: its training timesteps are
    unshifted, 1.0."""
    from trainer.models.family import family

    own = Path(base).expanduser() / "scheduler" / "scheduler_config.json"
    path = own if base and follow_paths and own.is_file() else \
        family(family_name).config_dir / "scheduler" / "scheduler_config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        return 1.0 if config.get("use_dynamic_shifting") else float(config.get("shift", 1.0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 1.0  # the flow-matching Euler scheduler's default shift in diffusers


def fixed(imp: Importer, key: str, conv: Callable[[Any], Any], ours: str, value: Any, why: Msg) -> None:
    """A setting ours holds at one value: mapped when the file agrees, changed (with ``why``) when not."""
    raw = imp.src[key]
    try:
        same = math.isclose(conv(raw), value) if isinstance(value, float) else conv(raw) == value
    except (ValueError, TypeError) as e:
        raise UserError(msg("error.kohya.bad_value", origin=imp.origin, key=key, value=raw, reason=str(e))) from None
    (imp.report.mapped(key, raw, ours, value) if same else imp.report.changed(key, raw, ours, value, why))
    imp.done.add(key)


def logit_params(imp: Importer, active: bool, unused: Msg) -> None:
    """logit_mean and logit_std: ours draws with mean 0 and std 1 when sd-scripts reads them (``active``), and
    they are ``unused`` otherwise."""
    for key, value in (("logit_mean", LOGIT_MEAN), ("logit_std", LOGIT_STD)):
        if key not in imp.src:
            continue
        if active:
            fixed(imp, key, as_float, f"timesteps {key}", value, msg("kohya.sd3.changed.logit", mean=LOGIT_MEAN,
                                                                        std=LOGIT_STD))
        else:
            imp.report.unsupported(key, imp.src[key], unused)
            imp.done.add(key)


def type_dims(imp: Importer, args: dict[str, Any], names: Iterable[str],
              prefix: str = "network_args ") -> dict[str, int]:
    """The per-layer-type dims ``args`` gives (0 leaves that type of layer out); a bad one is refused by name."""
    dims: dict[str, int] = {}
    for k in (k for k in names if k in args):
        try:
            dims[k] = as_int(str(args[k]).strip('"'))
        except ValueError as e:
            raise UserError(msg("error.kohya.bad_value", origin=imp.origin, key=prefix + k, value=args[k],
                                reason=str(e))) from None
    return dims


def rank(v: Any) -> int:
    """network_dim as sd-scripts reads it (4 when unset); a bad one is refused by name later."""
    try:
        return 4 if is_neutral(v) or v is None else as_int(v)
    except (ValueError, TypeError):
        return 4


# ------------------------------------------------------------------------------------------------ export


def te_placeholder(name: str) -> str:
    return f"<path to {name}.safetensors>"


def placeholders(args: dict[str, Any], rep: Report, base: str, model: str, model_note: Msg, files: Iterable[str],
                 files_note: Msg) -> None:
    """The model (``model``, a placeholder) and each of sd-scripts' ``files`` arguments as a placeholder for the
    user to fill in, where ours reads them from a diffusers folder or a hub id that sd-scripts cannot read."""
    args["pretrained_model_name_or_path"] = model
    rep.changed("model.base", base, "pretrained_model_name_or_path", model, model_note)
    for name in files:
        args[name] = te_placeholder(name)
        rep.changed("model.base", base, name, args[name], files_note)


def cache_text_encoders(cfg: Config, args: dict[str, Any], rep: Report, not_cached: Msg) -> None:
    """cache_text_encoder_outputs wherever sd-scripts can cache, as ours encodes once whenever it can: frozen text
    encoders, captions neither shuffled nor dropped (``not_cached`` says why not)."""
    ds = cfg.dataset
    cached = not cfg.lora.train_text_encoder and not (ds.shuffle_tags or ds.tag_dropout > 0 or ds.caption_dropout > 0)
    if cached:
        args["cache_text_encoder_outputs"] = True
    rep.mapped("lora.train_text_encoder", cfg.lora.train_text_encoder, "cache_text_encoder_outputs", cached,
               msg("kohya.sd3.export.cache") if cached else not_cached)
