"""Flux.1 LoRA configs of kohya_ss / sd-scripts (``flux_train_network.py`` with ``networks.lora_flux``): their Flux
settings as rows of the mapping table, and what becomes of them on import (how one is recognised is
:func:`trainer.kohya.flow.family_of`; the export is :mod:`trainer.kohya.flux_export`).

Key names were read in sd-scripts ``library/flux_train_utils.py`` (``add_flux_train_arguments``: clip_l, t5xxl,
ae, t5xxl_max_token_length, apply_t5_attn_mask, guidance_scale, timestep_sampling, sigmoid_scale,
model_prediction_type, discrete_flow_shift, model_type; and ``get_noisy_model_input_and_timesteps``, which draws the
noise levels by them), ``library/train_util.py`` (``add_dit_training_arguments``: weighting_scheme, logit_mean,
logit_std, mode_scale, blocks_to_swap, cache_text_encoder_outputs[_to_disk]), ``flux_train_network.py``
(fp8_base_unet, split_mode, cpu_offload_checkpointing; its noise scheduler's shift is discrete_flow_shift) and
``networks/lora_flux.py`` (the network_args: the per-layer-type dims, split_qkv, train_blocks, the block indices,
in_dims, train_t5xxl); and in kohya_ss ``kohya_gui/class_flux1.py`` / ``kohya_gui/lora_gui.py`` (the GUI's keys,
and which it passes for Flux.1: the dims and split_qkv as network_args, train_blocks only with split_mode, never
weighting_scheme, the logit parameters or sigmoid_scale).

What ours trains (:mod:`trainer.models.families.flux`): noise levels drawn logit-normal (mean 0, std 1) on the
base's training timesteps (unshifted for FLUX.1-dev, whose scheduler shifts only when sampling), the transformer's
output compared with the velocity as it is, every sample weighed the same; the guidance ``model.guidance``; q, k
and v each a LoRA of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import UserError
from trainer.kohya import flow, sd3
from trainer.kohya.flow import FLUX_MODULE, N_CACHE_TO_DISK, N_MMAP, fixed, put_defaults
from trainer.kohya.mapping import (
    BY_GUI,
    BY_SD,
    N_TE_CACHE,
    Row,
    as_bool,
    as_float,
    as_int,
    fp8_to_ours,
    optional_int,
)
from trainer.message import Msg, msg
from trainer.models.families.flux import SCHNELL_T5_TOKENS, T5_TOKENS

if TYPE_CHECKING:
    from trainer.kohya.importer import Importer

FLUX_DEV = "black-forest-labs/FLUX.1-dev"
"""The base a single-file Flux.1 config imports with: FLUX.1-dev's diffusers repository."""
FILE_SUFFIXES = (".safetensors", ".sft", ".ckpt", ".pt", ".pth", ".bin", ".gguf")
# networks.lora_flux's per-layer-type dims (network_args): 0 leaves that type of layer out. The double blocks'
# picture (img) and text (txt) streams, the single blocks' fused layers (linear1: q, k, v and the MLP's input;
# linear2: the attention's and the MLP's output) and the modulation layers of both kinds of block.
ATTN_DIMS = ("img_attn_dim", "txt_attn_dim")
MLP_DIMS = ("img_mlp_dim", "txt_mlp_dim")
MOD_DIMS = ("img_mod_dim", "txt_mod_dim", "single_mod_dim")
TYPE_DIMS = (*ATTN_DIMS, *MLP_DIMS, "single_dim", *MOD_DIMS)
TARGET_DIMS = {"attn": MLP_DIMS + MOD_DIMS, "attn_ff": MOD_DIMS}
"""The dims an export sets to 0 so networks.lora_flux trains our lora.targets (or the closest it can)."""
BLOCK_ARGS = ("train_double_block_indices", "train_single_block_indices")
N_FILES = msg("kohya.flux.row.files")
N_TIMESTEPS = msg("kohya.flux.row.timesteps")
N_TRAIN_T5 = msg("kohya.flux.row.train_t5")
N_OLD_SWAP = msg("kohya.flux.row.old_swap")
N_BLOCKS = msg("kohya.flux.row.train_blocks")
# the GUI keys kohya_ss turns into network_args (the dims, in_dims and block indices when set, split_qkv and
# train_t5xxl when on, train_blocks = single with split_mode)
GUI_NETWORK_KEYS = (*TYPE_DIMS, "in_dims", *BLOCK_ARGS, "split_qkv", "train_t5xxl", "train_blocks")

R = Row
FLUX_ROWS: tuple[Row, ...] = (
    R("flux1_checkbox", "", "model.family", note=msg("kohya.flux.row.family"), special=True),
    R("model_type", "model_type", "model.family", note=msg("kohya.flux.row.model_type"), special=True),
    R("clip_l", "clip_l", note=N_FILES), R("t5xxl", "t5xxl", note=N_FILES), R("ae", "ae", note=N_FILES),
    R("t5xxl_max_token_length", "t5xxl_max_token_length", note=msg("kohya.flux.row.t5_tokens", tokens=T5_TOKENS,
                                                                   schnell=SCHNELL_T5_TOKENS), special=True),
    R("apply_t5_attn_mask", "apply_t5_attn_mask", note=msg("kohya.flux.row.mask")),
    R("guidance_scale", "guidance_scale", "model.guidance", as_float, note=msg("kohya.flux.row.guidance"),
      sd_default=3.5),
    R("timestep_sampling", "timestep_sampling", note=N_TIMESTEPS, sd_default="sigma", special=True),
    R("", "sigmoid_scale", note=N_TIMESTEPS, special=True),
    R("discrete_flow_shift", "discrete_flow_shift", note=msg("kohya.flux.row.shift"), sd_default=3.0, special=True),
    R("model_prediction_type", "model_prediction_type", note=msg("kohya.flux.row.prediction"),
      sd_default="sigma_scaled", special=True),
    R("", "weighting_scheme", note=N_TIMESTEPS, special=True),
    R("", "logit_mean", note=N_TIMESTEPS, special=True), R("", "logit_std", note=N_TIMESTEPS, special=True),
    R("", "mode_scale", note=msg("kohya.sd3.row.mode_scale")),
    R("flux1_cache_text_encoder_outputs", "cache_text_encoder_outputs", "model.offload_text_encoders", as_bool,
      note=N_TE_CACHE, special=True),
    R("flux1_cache_text_encoder_outputs_to_disk", "cache_text_encoder_outputs_to_disk", note=N_CACHE_TO_DISK),
    R("blocks_to_swap", "blocks_to_swap", "model.block_swap", optional_int, note=msg("kohya.row.blocks_to_swap")),
    R("fp8_base_unet", "fp8_base_unet", "model.base_quant", fp8_to_ours, note=msg("kohya.flux.row.fp8_unet"),
      special=True),
    R("cpu_offload_checkpointing", "cpu_offload_checkpointing", note=msg("kohya.flux.row.cpu_offload")),
    R("split_mode", "split_mode", note=msg("kohya.flux.row.split_mode")),
    R("single_blocks_to_swap", "", note=N_OLD_SWAP), R("double_blocks_to_swap", "", note=N_OLD_SWAP),
    R("mem_eff_save", "mem_eff_save", note=msg("kohya.flux.row.mem_eff_save")),
    R("enable_all_linear", "", note=msg("kohya.flux.row.oft_only")),
    R("", "disable_mmap_load_safetensors", note=N_MMAP),
    R("train_t5xxl", "network_args train_t5xxl", note=N_TRAIN_T5, special=True),
    *(R(k, f"network_args {k}", "lora.targets", note=msg("kohya.flux.row.type_dims"), special=True)
      for k in TYPE_DIMS),
    R("split_qkv", "network_args split_qkv", "lora.targets", note=msg("kohya.flux.row.split_qkv"), special=True),
    R("train_blocks", "network_args train_blocks", note=N_BLOCKS, special=True),
    *(R(k, f"network_args {k}", note=msg("kohya.flux.row.block_indices"), special=True) for k in BLOCK_ARGS),
    R("in_dims", "network_args in_dims", note=msg("kohya.flux.row.in_dims"), special=True),
)
FLUX_BY_GUI: dict[str, Row] = {r.gui: r for r in FLUX_ROWS if r.gui}
FLUX_BY_SD: dict[str, Row] = {r.sd: r for r in FLUX_ROWS if r.sd and " " not in r.sd}
TABLES = {"gui": FLUX_BY_GUI, "sd": FLUX_BY_SD}
# sd-scripts' defaults for what a Flux.1 config leaves out (the kohya_ss GUI's boxes start at the same values)
DEFAULTS: dict[str, dict[str, Any]] = {
    kind: {getattr(r, kind): r.sd_default for r in FLUX_ROWS if r.sd_default is not None and getattr(r, kind)}
    for kind in ("gui", "sd")}
# the shared keys whose meaning Flux.1 changes
FLUX_NOTES = {"v_parameterization": msg("kohya.flux.v_parameterization"), "clip_skip": msg("kohya.flux.clip_skip"),
              "max_token_length": msg("kohya.flux.max_token_length"), "sdxl": msg("kohya.flux.sdxl")}
SCALED = ("sigmoid", "shift", "flux_shift")
"""The timestep samplings that read sigmoid_scale."""
SHIFTED = ("shift", "sigma")
"""The timestep samplings that read discrete_flow_shift."""


def is_flux(data: dict[str, Any]) -> bool:
    return flow.family_of(data) == "flux"


# ------------------------------------------------------------------------------------------------ import


def importing(imp: Importer) -> None:
    """Model family "flux" and every Flux.1 setting of a Flux.1 config; in any other config, the Flux.1 keys (the
    kohya_ss GUI saves them all) as read only for Flux.1."""
    table = TABLES[imp.kind]
    if not is_flux(imp.src):
        flow.others(imp, table, lambda key: msg("kohya.flux.and_sd3") if _sd3_reads(imp.kind, key)
                    else msg("kohya.flux.only"))
        return
    put_defaults(imp, DEFAULTS[imp.kind])
    keys = ("flux1_checkbox", "LoRA_type") if imp.kind == "gui" else ("network_module", "t5xxl")
    family_key = keys[0] if keys[0] in imp.src else keys[1]
    flow.take_family(imp, "flux", family_key, FLUX_MODULE, FLUX_NOTES)
    if "model_type" in imp.src:  # "flux": Chroma was refused with the file
        imp.report.mapped("model_type", imp.src["model_type"], "model.family", "flux")
    imp.done |= {"flux1_checkbox", "model_type"}
    _base(imp)
    _timesteps(imp)
    if "t5xxl_max_token_length" in imp.src:
        fixed(imp, "t5xxl_max_token_length", as_int, "t5 tokens", T5_TOKENS,
              msg("kohya.flux.changed.t5_tokens", tokens=T5_TOKENS, schnell=SCHNELL_T5_TOKENS))
    _fp8_unet(imp)
    if imp.kind == "gui":  # kohya_ss turns the GUI's Flux.1 LoRA boxes into network_args
        passed = {k: str(imp.src[k]) for k in GUI_NETWORK_KEYS if imp.src.get(k)}
        passed.pop("train_blocks", None)
        if _bool(imp, "split_mode"):
            passed["train_blocks"] = "single"
        network_args(imp, passed)
        for key in [k for k in GUI_NETWORK_KEYS if k in imp.src and k not in imp.done]:
            imp.report.unsupported(key, imp.src[key], table[key].note)  # left empty or off: not passed
            imp.done.add(key)


def _sd3_reads(kind: str, key: str) -> bool:
    """An SD3 config reads it too (the GUI's clip_l / t5xxl boxes are Flux.1's alone)."""
    row = sd3.TABLES[kind].get(key)
    return row is not None and row.note is not sd3.N_FLUX_ONLY


def _bool(imp: Importer, key: str) -> bool:
    raw = imp.src.get(key, False)
    try:
        return as_bool(raw)
    except ValueError as e:
        raise UserError(msg("error.kohya.bad_value", origin=imp.origin, key=key, value=raw, reason=str(e))) from None


def _base(imp: Importer) -> None:
    """pretrained_model_name_or_path: a diffusers folder is read as it is; a single file (what sd-scripts reads
    Flux.1 from, its text encoders and VAE named apart) cannot be here, and FLUX.1-dev's repository stands in."""
    key = "pretrained_model_name_or_path"
    raw = imp.src.get(key)
    if raw is None:
        return
    text = str(raw).strip()
    path = Path(text).expanduser()
    file = not text or text.startswith("<") or path.suffix.lower() in FILE_SUFFIXES  # or a placeholder
    if (imp.follow_paths and path.is_dir()) or not (file or (imp.follow_paths and path.is_file())):
        imp.put(key, None, BY_GUI[key] if imp.kind == "gui" else BY_SD[key], raw)
        return
    imp.values["model.base"] = FLUX_DEV
    imp.report.changed(key, raw, "model.base", FLUX_DEV, msg("kohya.flux.changed.base", file=path.name or text,
                                                               hub=FLUX_DEV))
    imp.done.add(key)


def _timesteps(imp: Importer) -> None:
    """timestep_sampling and what it reads (sigmoid_scale, discrete_flow_shift, weighting_scheme and the logit
    parameters), and model_prediction_type: ours draws its noise levels logit-normal (mean 0, std 1) shifted by the
    base's training shift, compares the output with the velocity as it is, and weighs every sample the same."""
    shift = flow.base_shift("flux", str(imp.values.get("model.base", "")), imp.follow_paths)
    sampling = str(imp.src.get("timestep_sampling") or "sigma").strip().lower()
    # the kohya_ss GUI passes no weighting_scheme for Flux.1 (its box is SD3's): sd-scripts' uniform then
    scheme = str(imp.src.get("weighting_scheme") or "uniform").strip().lower() if imp.kind == "sd" else "uniform"
    logit = sampling == "sigma" and scheme == "logit_normal"
    same = (sampling == "sigmoid" and shift == 1.0) or sampling == "shift" or logit
    shown = f"{sampling} (weighting_scheme {scheme})" if sampling == "sigma" else sampling
    why = msg("kohya.flux.changed.timesteps", sampling=sampling, shift=shift)
    if same:
        imp.report.mapped("timestep_sampling", shown, "timesteps", "logit_normal")
    else:
        imp.report.changed("timestep_sampling", shown, "timesteps", "logit_normal", why)
    imp.done.add("timestep_sampling")
    if "sigmoid_scale" in imp.src:
        _read_by(imp, "sigmoid_scale", sampling in SCALED, 1.0, msg("kohya.flux.changed.sigmoid_scale"),
                 msg("kohya.flux.unused.scale"))
    if "discrete_flow_shift" in imp.src:
        _read_by(imp, "discrete_flow_shift", sampling in SHIFTED, shift, msg("kohya.flux.changed.shift", shift=shift),
                 msg("kohya.flux.unused.shift"))
    if imp.kind == "sd":  # in a GUI config these are SD3's boxes
        if "weighting_scheme" in imp.src:
            raw = imp.src["weighting_scheme"]
            if sampling != "sigma":
                imp.report.unsupported("weighting_scheme", raw, msg("kohya.flux.unused.weighting"))
            else:
                (imp.report.mapped("weighting_scheme", raw, "timesteps", "logit_normal") if logit else
                 imp.report.changed("weighting_scheme", raw, "timesteps", "logit_normal", why))
            imp.done.add("weighting_scheme")
        flow.logit_params(imp, logit, msg("kohya.flux.unused.logit"))
    raw = imp.src.get("model_prediction_type")
    if str(raw).strip().lower() == "raw":
        imp.report.mapped("model_prediction_type", raw, "prediction", "raw")
    else:
        imp.report.changed("model_prediction_type", raw, "prediction", "raw", msg("kohya.flux.changed.prediction"))
    imp.done.add("model_prediction_type")


def _read_by(imp: Importer, key: str, read: bool, value: float, why: Msg, unused: Msg) -> None:
    """A number sd-scripts reads only with some timestep samplings: held at ``value`` by ours where it does."""
    if read:
        fixed(imp, key, as_float, f"timesteps {key}", value, why)
    else:
        imp.report.unsupported(key, imp.src[key], unused)
        imp.done.add(key)


def _fp8_unet(imp: Importer) -> None:
    """fp8_base_unet: the transformer in fp8 (sd-scripts then sets fp8_base too): model.base_quant = "fp8", which
    is only ever the transformer here."""
    if "fp8_base_unet" not in imp.src:
        return
    row = FLUX_BY_GUI["fp8_base_unet"]
    if _bool(imp, "fp8_base_unet"):
        imp.put("fp8_base_unet", None, row, imp.src["fp8_base_unet"])
        if "fp8_base" in imp.src:
            imp.report.unsupported("fp8_base", imp.src["fp8_base"], msg("kohya.flux.fp8_by_unet"))
            imp.done.add("fp8_base")
    else:
        imp.report.unsupported("fp8_base_unet", imp.src["fp8_base_unet"], row.note)
        imp.done.add("fp8_base_unet")


def network_args(imp: Importer, args: dict[str, str]) -> set[str]:
    """networks.lora_flux's own network_args (the GUI's boxes, as kohya_ss passes them): train_t5xxl, in_dims, the
    block choices and the per-layer-type dims with split_qkv, which make lora.targets; the keys it read."""
    prefix = "" if imp.kind == "gui" else "network_args "
    for key, note in (("train_t5xxl", N_TRAIN_T5), ("in_dims", msg("kohya.flux.row.in_dims"))):
        if key in args:
            imp.report.unsupported(prefix + key, args[key], note)
    targets = _targets(imp, args, prefix)
    blocks = str(args.get("train_blocks", "all")).strip('"')
    if blocks != "all":
        imp.report.changed(prefix + "train_blocks", blocks, "lora.targets", targets, N_BLOCKS)
    for key in (k for k in BLOCK_ARGS if k in args):  # "all" (the GUI's default) trains every block, as ours
        (imp.report.mapped(prefix + key, args[key], "lora.targets", targets) if _all_blocks(args, key) else
         imp.report.changed(prefix + key, args[key], "lora.targets", targets, msg("kohya.flux.row.block_indices")))
    imp.done |= {k for k in GUI_NETWORK_KEYS if k in args}
    return set(GUI_NETWORK_KEYS)


def _targets(imp: Importer, args: dict[str, str], prefix: str) -> str:
    """lora.targets from the per-layer-type dims and split_qkv: attn_ff when only the modulation dims are 0 and q,
    k and v are split (ours trains each of them as a LoRA of its own), attn when the double blocks' feed-forward
    dims are 0 too; the closest otherwise, saying why."""
    dims = flow.type_dims(imp, args, TYPE_DIMS, prefix)
    split = str(args.get("split_qkv", "False")).strip('"') == "True"  # as networks.lora_flux reads it
    on = {k: dims.get(k) != 0 for k in TYPE_DIMS}  # a dim left out trains that type at network_dim
    targets = "attn_ff" if any(on[k] for k in MLP_DIMS) else "attn"
    rank = flow.rank(imp.get("network_dim"))
    every_block = str(args.get("train_blocks", "all")).strip('"') == "all" and all(_all_blocks(args, k)
                                                                                 for k in BLOCK_ARGS)
    exact = (targets == "attn_ff" and split and every_block and all(v in (0, rank) for v in dims.values())
             and all(on[k] for k in (*ATTN_DIMS, *MLP_DIMS, "single_dim")) and not any(on[k] for k in MOD_DIMS))
    named = [*dims, *(["split_qkv"] if "split_qkv" in args else [])]
    default_key = "LoRA_type" if imp.kind == "gui" else "network_module"
    key = prefix + ", ".join(named) if named else default_key
    shown = ", ".join(f"{k}={dims.get(k, args.get(k))}" for k in named) if named else \
        imp.src.get(default_key, FLUX_MODULE)
    imp.values["lora.targets"] = targets
    if exact:
        imp.report.mapped(key, shown, "lora.targets", targets)
    else:
        imp.report.changed(key, shown, "lora.targets", targets, msg("kohya.flux.changed.targets", targets=targets))
    return targets


def _all_blocks(args: dict[str, str], key: str) -> bool:
    return str(args.get(key, "all")).strip().strip('"').lower() == "all"
