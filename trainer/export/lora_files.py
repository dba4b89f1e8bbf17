"""LoRA files other tools load.

- ``lora.safetensors``: sd-scripts' (kohya) layout that A1111, Forge and ComfyUI read: ``lora_unet_*`` /
  ``lora_te_*`` (SDXL: ``lora_te1_*``, ``lora_te2_*``, UNet blocks in the original ``input_blocks`` naming
  as sd-scripts writes them), ``.lora_down`` / ``.lora_up`` weights in fp16 and ``.alpha`` holding the real
  alpha (diffusers' converter writes alpha = rank, which changes the strength whenever alpha != rank).
  sd-scripts' ``ss_*`` metadata and ``modelspec.*`` keys go with it, plus our resolved config.
- ``lora_diffusers.safetensors``: diffusers' layout with the adapter metadata, so alpha survives a reload
  (``DIFFUSERS_TWIN`` names it, and the EMA file's, beside each kohya file).

No file is written while any tensor in it is non-finite: :class:`NonFiniteTensorError` names the first one.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import torch

from trainer.io import atomic_target
from trainer.models.family import family as model_family
from trainer.tensor_files import NonFiniteTensorError, first_nonfinite, save_safetensors

# The diffusers-layout file written beside each kohya-layout one (live and EMA weights).
DIFFUSERS_TWIN = {"lora.safetensors": "lora_diffusers.safetensors", "lora_ema.safetensors": "lora_ema_diffusers.safetensors"}


# ------------------------------------------------------------------------------------------- key names


def _layers_per_block(unet_config, i: int) -> int:
    lpb = unet_config["layers_per_block"]
    return lpb[i] if isinstance(lpb, list | tuple) else lpb


# a resnet's layers in the original layout: conv1 = in_layers.2, conv2 = out_layers.3, 1x1 shortcut = skip_connection
_SGM_RESNET = {"conv1": "in_layers.2", "conv2": "out_layers.3", "conv_shortcut": "skip_connection"}


def unet_module_to_sgm(module: str, unet_config) -> str:
    """diffusers ``down_blocks.1.attentions.0.…`` → original ``input_blocks.4.1.…`` (sd-scripts' SDXL names);
    resnets sit at ``.0.`` of the same block (``input_blocks.4.0.in_layers.2`` for ``resnets.0.conv1``)."""
    m = re.fullmatch(r"(down_blocks|up_blocks)\.(\d+)\.(attentions|resnets)\.(\d+)\.(.*)", module)
    if m:
        path, i, kind, j, rest = m[1], int(m[2]), m[3], int(m[4]), m[5]
        if path == "down_blocks":
            index = 1 + sum(_layers_per_block(unet_config, b) + 1 for b in range(i)) + j
            prefix = f"input_blocks.{index}"
        else:
            n_up = len(unet_config["up_block_types"])
            # the up path has layers_per_block + 1 resnets per block, counted from the reversed down config
            index = sum(_layers_per_block(unet_config, n_up - 1 - b) + 1 for b in range(i)) + j
            prefix = f"output_blocks.{index}"
        tail = f"1.{rest}" if kind == "attentions" else f"0.{_sgm_resnet_layer(rest, module)}"
        return f"{prefix}.{tail}"
    m = re.fullmatch(r"mid_block\.(attentions|resnets)\.(\d+)\.(.*)", module)
    if m:
        # middle_block.0 = resnets.0, .1 = the attention, .2 = resnets.1
        block = 1 if m[1] == "attentions" else 2 * int(m[2])
        return f"middle_block.{block}." + (m[3] if m[1] == "attentions" else _sgm_resnet_layer(m[3], module))
    raise ValueError(f"no original-layout name for UNet module {module!r}")


def _sgm_resnet_layer(layer: str, module: str) -> str:
    if layer not in _SGM_RESNET:
        raise ValueError(f"no original-layout name for UNet module {module!r}")
    return _SGM_RESNET[layer]


def kohya_module_name(role: str, module: str, family: str, unet_config=None) -> str:
    adapter = model_family(family)
    if role == adapter.denoiser_component:
        if adapter.kohya_unet_original_names:
            module = unet_module_to_sgm(module, unet_config)
        return "lora_unet_" + module.replace(".", "_")
    # transformers >= 5.6 drops the "text_model." level on CLIPTextModel; A1111/ComfyUI expect it.
    module = module.removeprefix("text_model.")
    return f"{adapter.text_encoder(role).kohya_prefix}_text_model_" + module.replace(".", "_")


def trained_rank_alpha(lora_configs: dict[str, dict], role: str, module: str) -> tuple[int, float]:
    """The rank and alpha peft gave ``module`` of ``role`` when the adapter was injected with ``lora_configs``
    (:func:`trainer.models.lora.adapter_config`): the first ``rank_pattern`` / ``alpha_pattern`` key that matches the
    module's name, else ``r`` / ``lora_alpha`` (peft's own lookup)."""
    from peft.utils.other import get_pattern_key

    cfg = lora_configs[role]
    ranks: dict[str, int] = cfg.get("rank_pattern") or {}
    alphas: dict[str, float] = cfg.get("alpha_pattern") or {}
    return (int(ranks.get(get_pattern_key(list(ranks), module), cfg["r"])),
            float(alphas.get(get_pattern_key(list(alphas), module), cfg["lora_alpha"])))


def _mmdit_writer():
    from trainer.export.mmdit import mmdit_state_dict

    return lambda sd, rank_alpha, config, dtype: mmdit_state_dict(sd, rank_alpha, dtype)


def _zimage_writer():
    from trainer.export.zimage import zimage_state_dict

    return lambda sd, rank_alpha, config, dtype: zimage_state_dict(sd, rank_alpha, dtype)


def _flux_writer():
    from trainer.export.flux import flux_state_dict

    return flux_state_dict  # (sd, rank_alpha, the transformer's config, dtype): the single blocks' widths


# the layouts whose denoiser names are the original model's, q, k and v fused (family.kohya_layout → its writer)
FUSED_LAYOUTS = {"mmdit": _mmdit_writer, "zimage": _zimage_writer, "flux": _flux_writer}


def kohya_state_dict(
    peft_states: dict[str, dict[str, torch.Tensor]], lora_configs: dict[str, dict], family: str, unet_config,
    dtype=torch.float16,
) -> dict[str, torch.Tensor]:
    """sd-scripts' keys; a convolution's ``lora_down`` is (rank, in, k, k) and ``lora_up`` (out, rank, 1, 1), as
    peft holds them. Each module's ``.alpha`` is the one it trained with (``lora_configs``, the adapters' peft
    arguments by role), since A1111/Forge/ComfyUI apply ``alpha / rank`` per module: linear layers and 1×1
    convolutions the network alpha, k×k convolutions the conv alpha, as sd-scripts gives them. A module whose
    ``lora_down`` rank is not the rank its config gives it raises ``ValueError``: the file would claim an alpha
    it did not train with."""
    out: dict[str, torch.Tensor] = {}
    adapter = model_family(family)
    for role, sd in peft_states.items():
        if role == adapter.denoiser_component and adapter.kohya_layout in FUSED_LAYOUTS:
            writer = FUSED_LAYOUTS[adapter.kohya_layout]()
            out.update(writer(sd, lambda module, r=role: trained_rank_alpha(lora_configs, r, module), unet_config,
                              dtype))
            continue
        for key, tensor in sd.items():
            m = re.match(r"(.*)\.lora_([AB])\.weight$", key)
            if not m:
                continue
            name = kohya_module_name(role, m[1], family, unet_config)
            out[f"{name}.lora_{'down' if m[2] == 'A' else 'up'}.weight"] = tensor.to(dtype)
            if m[2] == "A":
                rank, alpha = trained_rank_alpha(lora_configs, role, m[1])
                if tensor.shape[0] != rank:
                    raise ValueError(f"{role}.{m[1]}: lora_A has rank {tensor.shape[0]}, its adapter config gives "
                                     f"{rank}; its alpha ({alpha}) would be applied at the wrong strength")
                out[f"{name}.alpha"] = torch.tensor(alpha, dtype=dtype)
    return out


# ------------------------------------------------------------------------------------------- metadata


def kohya_metadata(ctx: dict[str, Any]) -> dict[str, str]:
    """sd-scripts' ``ss_*`` keys (strings, as it writes them) that users' tools read, plus ``modelspec.*``."""
    cfg, plan, report = ctx["config"], ctx["plan"], ctx["report"]
    res = cfg.dataset.resolution
    folders: dict[str, dict[str, int]] = {}
    tag_freq: dict[str, dict[str, int]] = {}
    reg_dirs: dict[str, dict[str, int]] = {}
    for item in report.items:
        folder = Path(item.folder).name if item.folder else "."
        if item.prior:  # sd-scripts lists regularisation folders on their own, without tags
            reg = reg_dirs.setdefault(folder, {"n_repeats": int(item.repeats), "img_count": 0})
            reg["img_count"] += 1
            continue
        entry = folders.setdefault(folder, {"n_repeats": int(item.repeats), "img_count": 0})
        entry["img_count"] += 1
        tags = tag_freq.setdefault(folder, {})
        for tag in (t.strip() for t in (item.caption or "").split(",")):
            if tag:
                tags[tag] = tags.get(tag, 0) + 1
    n_reg = sum(d["n_repeats"] * d["img_count"] for d in reg_dirs.values())
    # sd-scripts writes its network args as strings: conv_dim / conv_alpha when convolutions carry LoRA
    conv_args = ({"conv_dim": str(cfg.lora.conv_rank), "conv_alpha": str(float(cfg.lora.effective_conv_alpha)),
                  "conv_blocks": ",".join(cfg.lora.conv_blocks) or "all"} if cfg.lora.conv_rank else {})
    family = model_family(ctx["family"])
    now = time.time()
    meta = {
        "ss_network_module": family.kohya_network_module,
        "ss_network_dim": str(cfg.lora.rank),
        "ss_network_alpha": str(float(cfg.lora.alpha)),
        "ss_network_args": json.dumps({"targets": cfg.lora.targets, **conv_args}),
        "ss_base_model_version": family.base_model_version,
        "ss_v2": "False",
        "ss_sd_model_name": Path(cfg.model.base).name,
        "ss_resolution": f"({res}, {res})",
        "ss_num_train_images": str(plan.image_repeats - n_reg),
        "ss_num_reg_images": str(n_reg),
        "ss_num_batches_per_epoch": str(plan.batches_per_epoch),
        "ss_num_epochs": str(plan.epochs),
        "ss_epoch": str(ctx["epoch"]),
        "ss_steps": str(ctx["step"]),
        "ss_max_train_steps": str(plan.total_steps),
        "ss_batch_size_per_device": str(cfg.train.batch_size),
        "ss_gradient_accumulation_steps": str(cfg.train.grad_accum),
        "ss_learning_rate": str(cfg.optim.lr),
        "ss_unet_lr": str(cfg.optim.lr),
        "ss_text_encoder_lr": str(cfg.effective_te_lr if cfg.lora.train_text_encoder else 0.0),
        "ss_lr_scheduler": cfg.optim.scheduler,
        "ss_lr_warmup_steps": str(cfg.optim.warmup_steps),
        "ss_optimizer": cfg.optim.optimizer,
        "ss_max_grad_norm": str(cfg.optim.max_grad_norm),
        "ss_mixed_precision": ctx.get("precision", cfg.train.precision),
        "ss_seed": str(cfg.train.seed),
        "ss_noise_offset": str(cfg.train.noise_offset),
        "ss_min_snr_gamma": str(cfg.train.min_snr_gamma),
        "ss_gradient_checkpointing": str(cfg.train.gradient_checkpointing),
        "ss_caption_dropout_rate": str(cfg.dataset.caption_dropout),
        "ss_shuffle_caption": str(cfg.dataset.shuffle_tags),
        "ss_keep_tokens": str(cfg.dataset.keep_tokens),
        "ss_enable_bucket": str(cfg.dataset.buckets),
        "ss_bucket_info": json.dumps({"buckets": report.to_json().get("buckets", [])}),
        "ss_dataset_dirs": json.dumps(folders, ensure_ascii=False),
        "ss_reg_dataset_dirs": json.dumps(reg_dirs, ensure_ascii=False),
        "ss_tag_frequency": json.dumps(tag_freq, ensure_ascii=False),
        "ss_training_started_at": str(ctx["started_at"]),
        "ss_training_finished_at": str(now),
        "ss_output_name": cfg.save.name,
        "ss_session_id": str(ctx.get("run_id", "")),
        "ss_prediction_type": ctx.get("prediction_type", "epsilon"),
        "ss_ema": ctx.get("weights", "live"),
        "modelspec.sai_model_spec": "1.0.0",
        "modelspec.architecture": family.modelspec_architecture,
        "modelspec.implementation": "diffusers",
        "modelspec.title": f"{cfg.save.name} (step {ctx['step']})",
        "modelspec.resolution": f"{res}x{res}",
        "modelspec.date": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now)),
        "lora_doctor_config": cfg.to_toml(),
    }
    if cfg.dataset.trigger:
        meta["modelspec.trigger_phrase"] = cfg.dataset.trigger
    return meta


# ------------------------------------------------------------------------------------------- writers


def write_kohya(path: Path, peft_states, ctx: dict[str, Any], lora_configs: dict[str, dict] | None = None) -> Path:
    """The kohya file; ``lora_configs`` are the adapters' peft arguments the modules trained with
    (``LoraModules.config_by_role``), else ``ctx["lora_configs"]``, else rebuilt from the run's config."""
    if lora_configs is None:
        lora_configs = ctx.get("lora_configs") or _adapter_configs(ctx, peft_states)
    tensors = kohya_state_dict(peft_states, lora_configs, ctx["family"], ctx["unet_config"])
    save_safetensors(tensors, path, metadata=kohya_metadata(ctx))
    return path


def _adapter_configs(ctx: dict[str, Any], roles) -> dict[str, dict]:
    """What :func:`trainer.models.lora.attach_lora` gave peft for ``roles``, rebuilt by the same function from the run's
    config; the UNet it reads its convolutions' names and kernel sizes from is built on the meta device (no
    memory, ~50 ms for SD1.5)."""
    from trainer.models.lora import adapter_config

    with torch.device("meta"):
        denoiser = model_family(ctx["family"]).denoiser_from_config(ctx["unet_config"])
    return {role: adapter_config(ctx["config"].lora, role, denoiser, ctx["family"]) for role in roles}


def write_diffusers(path: Path, peft_states, lora_configs: dict[str, dict], family: str) -> Path:
    """diffusers' own layout via ``save_lora_weights``, with adapter metadata (rank, alpha, targets, per-layer
    patterns)."""
    for role, sd in peft_states.items():
        bad = first_nonfinite(sd)
        if bad is not None:
            raise NonFiniteTensorError(path, f"{role}.{bad}")

    def meta(role: str):
        return dict(lora_configs[role])  # r, lora_alpha, target_modules (+ rank/alpha_pattern with conv LoRA)

    adapter = model_family(family)
    denoiser = adapter.denoiser_component
    kwargs: dict[str, Any] = {f"{denoiser}_lora_layers": peft_states[denoiser],
                              f"{denoiser}_lora_adapter_metadata": meta(denoiser)}
    for te in adapter.text_encoders:
        if te.lora_role in peft_states:
            # keys as peft gives them: they match the live module tree diffusers' loader maps them onto
            kwargs[f"{te.component}_lora_layers"] = peft_states[te.lora_role]
            kwargs[f"{te.component}_lora_adapter_metadata"] = meta(te.lora_role)
    cls = adapter.pipeline_class()
    with atomic_target(path) as tmp:  # diffusers writes <folder>/<weight_name>: the temp file's own name
        cls.save_lora_weights(str(tmp.parent), weight_name=tmp.name, **kwargs)
    return path

