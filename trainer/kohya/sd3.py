"""SD3.5 configs of kohya_ss / sd-scripts (``sd3_train_network.py`` with ``networks.lora_sd3``): how one is
recognised, its SD3 settings as rows of the mapping table, and what becomes of them on import (the export is
:mod:`trainer.kohya.sd3_export`).

Key names were read in sd-scripts ``library/sd3_train_utils.py`` (``add_sd3_training_arguments``: clip_l, clip_g,
t5xxl, t5xxl_device, t5xxl_dtype, t5xxl_max_token_length, the attention masks, the three dropout rates, the position
embedding switches, training_shift), ``library/train_util.py`` (weighting_scheme, logit_mean, logit_std, mode_scale,
blocks_to_swap, fp8_base, cache_text_encoder_outputs[_to_disk]), ``sd3_train_network.py`` and
``networks/lora_sd3.py`` (train_t5xxl and the per-layer-type dims are ``network_args``), and in kohya_ss
``kohya_gui/lora_gui.py`` / ``kohya_gui/class_sd3.py`` (the GUI's ``sd3_*`` keys, and which keys it passes to
sd-scripts for SD3: never training_shift, apply_*_attn_mask or t5xxl_max_token_length).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.kohya import flow
from trainer.kohya.flow import N_CACHE_TO_DISK, N_MMAP, SD3_MODULE, fixed, put_defaults
from trainer.kohya.mapping import N_TE_CACHE, Row, as_bool, as_float, as_int, optional_int
from trainer.message import msg
from trainer.models.families.sd3 import T5_TOKENS

if TYPE_CHECKING:
    from trainer.kohya.importer import Importer

TE_FILES = ("clip_l", "clip_g", "t5xxl")
"""sd-scripts' three text-encoder arguments, and the names under ``text_encoders.`` in an SD3 single file."""
# networks.lora_sd3's per-layer-type dims (network_args): 0 leaves that type of layer out
ATTN_DIMS = ("context_attn_dim", "x_attn_dim")
MLP_DIMS = ("context_mlp_dim", "x_mlp_dim")
MOD_DIMS = ("context_mod_dim", "x_mod_dim")
TYPE_DIMS = ATTN_DIMS + MLP_DIMS + MOD_DIMS
TARGET_DIMS = {"attn": MLP_DIMS + MOD_DIMS, "attn_ff": MOD_DIMS}
"""The dims an export sets to 0 so networks.lora_sd3 trains our lora.targets (it trains every linear layer of the
joint blocks otherwise, the modulation (adaLN) layers too)."""

N_TE_FILE = msg("kohya.sd3.row.te_file")
N_FLUX_ONLY = msg("kohya.sd3.row.flux_only")
N_MASK = msg("kohya.sd3.row.mask")
N_TE_DROPOUT = msg("kohya.sd3.row.te_dropout")
N_POS = msg("kohya.sd3.row.pos_embed")
N_TIMESTEPS = msg("kohya.sd3.row.timesteps")
N_TRAIN_T5 = msg("kohya.sd3.row.train_t5")
N_SAVE_TE = msg("kohya.sd3.row.save_te")

R = Row
SD3_ROWS: tuple[Row, ...] = (
    R("sd3_checkbox", "", "model.family", note=msg("kohya.sd3.row.family"), special=True),
    R("sd3_clip_l", "clip_l", note=N_TE_FILE), R("clip_g", "clip_g", note=N_TE_FILE),
    R("sd3_t5xxl", "t5xxl", note=N_TE_FILE),
    R("clip_l", "", note=N_FLUX_ONLY), R("t5xxl", "", note=N_FLUX_ONLY),
    R("apply_t5_attn_mask", "", note=N_FLUX_ONLY), R("t5xxl_max_token_length", "", note=N_FLUX_ONLY),
    R("train_t5xxl", "", note=N_FLUX_ONLY),
    R("t5xxl_device", "t5xxl_device", note=msg("kohya.sd3.row.t5_device")),
    R("t5xxl_dtype", "t5xxl_dtype", note=msg("kohya.sd3.row.t5_dtype")),
    R("", "t5xxl_max_token_length", note=msg("kohya.sd3.row.t5_tokens", tokens=T5_TOKENS), special=True),
    R("", "apply_lg_attn_mask", note=N_MASK), R("", "apply_t5_attn_mask", note=N_MASK),
    R("sd3_clip_l_dropout_rate", "clip_l_dropout_rate", note=N_TE_DROPOUT),
    R("clip_g_dropout_rate", "clip_g_dropout_rate", note=N_TE_DROPOUT),
    R("sd3_t5_dropout_rate", "t5_dropout_rate", note=N_TE_DROPOUT),
    R("sd3_enable_scaled_pos_embed", "enable_scaled_pos_embed", note=N_POS),
    R("pos_emb_random_crop_rate", "pos_emb_random_crop_rate", note=N_POS),
    R("", "training_shift", note=msg("kohya.sd3.row.shift"), sd_default=1.0, special=True),
    R("weighting_scheme", "weighting_scheme", note=N_TIMESTEPS, sd_default="uniform", special=True),
    R("logit_mean", "logit_mean", note=N_TIMESTEPS, special=True),
    R("logit_std", "logit_std", note=N_TIMESTEPS, special=True),
    R("mode_scale", "mode_scale", note=msg("kohya.sd3.row.mode_scale")),
    R("sd3_cache_text_encoder_outputs", "cache_text_encoder_outputs", "model.offload_text_encoders", as_bool,
      note=N_TE_CACHE, special=True),
    R("sd3_cache_text_encoder_outputs_to_disk", "cache_text_encoder_outputs_to_disk", note=N_CACHE_TO_DISK),
    R("blocks_to_swap", "blocks_to_swap", "model.block_swap", optional_int, note=msg("kohya.row.blocks_to_swap")),
    R("", "train_t5xxl", note=N_TRAIN_T5),
    R("", "network_args train_t5xxl", note=N_TRAIN_T5, special=True),
    R("", "network_args context_/x_ attn/mlp/mod_dim", "lora.targets", note=msg("kohya.sd3.row.type_dims"),
      special=True),
    R("sd3_fused_backward_pass", "fused_backward_pass", note=msg("kohya.sd3.row.fused_backward")),
    R("sd3_disable_mmap_load_safetensors", "disable_mmap_load_safetensors", note=N_MMAP),
    R("save_clip", "save_clip", note=N_SAVE_TE), R("save_t5xxl", "save_t5xxl", note=N_SAVE_TE),
    R("sd3_text_encoder_batch_size", "text_encoder_batch_size", note=msg("kohya.sd3.row.te_batch")),
)
SD3_BY_GUI: dict[str, Row] = {r.gui: r for r in SD3_ROWS if r.gui}
SD3_BY_SD: dict[str, Row] = {r.sd: r for r in SD3_ROWS if r.sd and " " not in r.sd}
TABLES = {"gui": SD3_BY_GUI, "sd": SD3_BY_SD}
# sd-scripts' defaults for what an SD3 config leaves out, where they differ from what ours trains; the kohya_ss GUI
# never passes training_shift, and its weighting_scheme box starts at logit_normal
DEFAULTS: dict[str, dict[str, Any]] = {"sd": {r.sd: r.sd_default for r in SD3_ROWS if r.sd_default is not None},
                                       "gui": {"training_shift": SD3_BY_SD["training_shift"].sd_default}}
# the shared keys whose meaning SD3 changes
SD3_NOTES = {"v_parameterization": msg("kohya.sd3.v_parameterization"), "clip_skip": msg("kohya.sd3.clip_skip"),
             "sdxl": msg("kohya.sd3.sdxl")}


def is_sd3(data: dict[str, Any]) -> bool:
    """The kohya_ss GUI's SD3 checkbox, or sd-scripts' SD3 network module (and not a Flux.1 config)."""
    return flow.family_of(data) == "sd3"


def base_shift(base: str, follow_paths: bool = True) -> float:
    """The flow-matching shift ours trains SD3.5 with (:func:`trainer.kohya.flow.base_shift`)."""
    return flow.base_shift("sd3", base, follow_paths)


# --------------------------------------------------------------------------------------- import


def importing(imp: Importer) -> None:
    """Model family "sd3" and every SD3 setting of an SD3 config; in any other config, the SD3 keys (the kohya_ss
    GUI saves them all) as read only for SD3."""
    table = SD3_BY_GUI if imp.kind == "gui" else SD3_BY_SD
    if not is_sd3(imp.src):
        flow.others(imp, table, lambda key: table[key].note if table[key].note is N_FLUX_ONLY or key == "sd3_checkbox"
                    else msg("kohya.sd3.only"))
        return
    put_defaults(imp, DEFAULTS[imp.kind])
    family_key = "sd3_checkbox" if imp.kind == "gui" and "sd3_checkbox" in imp.src else "network_module"
    flow.take_family(imp, "sd3", family_key, SD3_MODULE, SD3_NOTES)
    imp.done |= {"sd3_checkbox"}
    _timesteps(imp)
    for key in [k for k in imp.src if k in table and k not in imp.done and not table[k].ours]:
        if key == "t5xxl_max_token_length" and imp.kind == "sd":
            fixed(imp, key, as_int, "t5 tokens", T5_TOKENS, msg("kohya.sd3.changed.t5_tokens", tokens=T5_TOKENS))
        else:
            imp.report.unsupported(key, imp.src[key], table[key].note)
            imp.done.add(key)
    if imp.kind == "gui":  # kohya_ss passes no per-layer-type dims: networks.lora_sd3 trains every linear layer
        _targets(imp, {}, "LoRA_type")


def _timesteps(imp: Importer) -> None:
    """weighting_scheme and its parameters, and training_shift: ours draws logit-normal(0, 1) timesteps, shifted by
    the base's scheduler shift, every sample weighed the same."""
    raw = imp.src.get("weighting_scheme")
    # the GUI drops an empty box (sd-scripts' uniform then); a GUI config from before the box starts it at logit_normal
    scheme = str(raw or ("logit_normal" if imp.kind == "gui" and raw is None else "uniform")).strip().lower()
    if "weighting_scheme" in imp.src:
        if scheme == "logit_normal":
            imp.report.mapped("weighting_scheme", raw, "timesteps", "logit_normal")
        else:
            imp.report.changed("weighting_scheme", raw, "timesteps", "logit_normal",
                               msg("kohya.sd3.changed.weighting", scheme=scheme))
        imp.done.add("weighting_scheme")
    flow.logit_params(imp, scheme == "logit_normal", msg("kohya.sd3.logit_unused"))
    if "training_shift" in imp.src:
        shift = base_shift(str(imp.src.get("pretrained_model_name_or_path") or ""), imp.follow_paths)
        fixed(imp, "training_shift", as_float, "timesteps shift", shift, msg("kohya.sd3.changed.shift", shift=shift))


def network_args(imp: Importer, args: dict[str, str]) -> set[str]:
    """networks.lora_sd3's own network_args (train_t5xxl, the per-layer-type dims); the keys it read."""
    if "train_t5xxl" in args:
        imp.report.unsupported("network_args train_t5xxl", args["train_t5xxl"], N_TRAIN_T5)
    _targets(imp, args, "network_module")
    return {"train_t5xxl", *TYPE_DIMS}


def _targets(imp: Importer, args: dict[str, str], default_key: str) -> None:
    """lora.targets from the per-layer-type dims: attn when the feed-forward and modulation dims are 0, attn_ff when
    only the modulation dims are; the closest otherwise (ours never trains the modulation layers)."""
    dims = flow.type_dims(imp, args, TYPE_DIMS)
    on = {k: dims.get(k) != 0 for k in TYPE_DIMS}  # a dim left out trains that type at network_dim
    targets = "attn_ff" if any(on[k] for k in MLP_DIMS) else "attn"
    rank = flow.rank(imp.get("network_dim"))
    exact = (all(on[k] for k in ATTN_DIMS) and not any(on[k] for k in MOD_DIMS)
             and len({on[k] for k in MLP_DIMS}) == 1 and all(v in (0, rank) for v in dims.values()))
    key = "network_args " + ", ".join(dims) if dims else default_key
    shown = ", ".join(f"{k}={v}" for k, v in dims.items()) if dims else imp.src.get(default_key, SD3_MODULE)
    imp.values["lora.targets"] = targets
    if exact:
        imp.report.mapped(key, shown, "lora.targets", targets)
    else:
        imp.report.changed(key, shown, "lora.targets", targets, msg("kohya.sd3.changed.targets", targets=targets))

