"""Write a diffusers SD1.5/SDXL pipeline as one original-layout (LDM / A1111-style) ``.safetensors`` file.

Most people share and download Stable Diffusion models as a single checkpoint in the layout of the original
CompVis/Stability code (``model.diffusion_model.*``, ``first_stage_model.*``, ``cond_stage_model.*`` or
``conditioner.embedders.*``), not as a diffusers folder. Writing that layout lets a trained or merged model go
straight into A1111/ComfyUI, and lets ``from_single_file`` in diffusers read it back.

The mapping is the inverse of what diffusers' single-file loader does, written here from the two layouts (not
copied from a conversion script). It is computed from each model's own structure, so the tiny test models and
the real ones go through the same code. Every tensor must land somewhere: a key the mapping does not know is an
error, never silently dropped, because diffusers loads a checkpoint that lacks a weight without complaint
(leaving it empty or random) and the mistake only shows as wrong pictures or a late crash.

Only weights go in the file; the configs go in a sibling diffusers-layout folder (:func:`write_config_folder`)
that ``from_single_file(..., config=folder)`` reads, so nothing has to be guessed or fetched from a hub.
"""

from __future__ import annotations

from pathlib import Path

import torch

from trainer.io import atomic_target

UNET_PREFIX = "model.diffusion_model."
VAE_PREFIX = "first_stage_model."
SD15_CLIP_PREFIX = "cond_stage_model.transformer.text_model."
SDXL_CLIP_PREFIX = "conditioner.embedders.0.transformer.text_model."
SDXL_OPEN_CLIP_PREFIX = "conditioner.embedders.1.model."

# Sub-module names inside one block: diffusers name → original name.
UNET_RESNET = {
    "norm1": "in_layers.0",
    "conv1": "in_layers.2",
    "time_emb_proj": "emb_layers.1",
    "norm2": "out_layers.0",
    "conv2": "out_layers.3",
    "conv_shortcut": "skip_connection",
}
VAE_RESNET = {"conv_shortcut": "nin_shortcut"}  # norm1/conv1/norm2/conv2 keep their names
VAE_ATTENTION = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}


class LayoutError(ValueError):
    """The model has a shape the original single-file layout cannot express (or a key we cannot place)."""


# ------------------------------------------------------------------------------------------ generic mapper


def _remap(state: dict[str, torch.Tensor], modules: dict[str, tuple[str, dict[str, str]]], what: str):
    """Rename every key of ``state`` by its module prefix.

    ``modules`` maps a diffusers module path to ``(original path, {diffusers child: original child})``; the
    longest matching module path wins, the first child name after it is renamed, the rest is kept.
    """
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state.items():
        parts = key.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in modules:
                break
        else:
            raise LayoutError(f"{what}: no original-layout name for {key!r}")
        new_module, children = modules[module]
        rest = ".".join(parts[cut:])
        for old, new in children.items():
            if rest == old or rest.startswith(old + "."):
                rest = new + rest[len(old) :]
                break
        new_key = f"{new_module}.{rest}" if new_module else rest
        if new_key in out:
            raise LayoutError(f"{what}: two weights would both be written as {new_key!r}")
        out[new_key] = tensor
    return out


# ----------------------------------------------------------------------------------------------------- UNet


def _unet_modules(unet) -> dict[str, tuple[str, dict[str, str]]]:
    """Where each diffusers UNet module lives in the original ``input_blocks/middle_block/output_blocks``.

    The original UNet is a flat list of steps: per down block ``layers_per_block`` × (resnet [+ attention])
    then a downsampler as its own step; per up block ``layers_per_block + 1`` × (resnet [+ attention]) with the
    upsampler appended to the last step. diffusers' reader recomputes the block from the step index with that
    fixed count, so uneven blocks cannot be written and are refused here.
    """
    cfg = unet.config
    lpb = cfg.layers_per_block
    if not isinstance(lpb, int):
        raise LayoutError(
            f"UNet: layers_per_block={lpb!r} varies per block; the original layout needs one number"
        )
    mid = unet.mid_block
    if mid is None or len(mid.resnets) != 2 or len(getattr(mid, "attentions", ())) != 1:
        raise LayoutError("UNet: the original layout needs a middle block of resnet, attention, resnet")

    m: dict[str, tuple[str, dict[str, str]]] = {
        "conv_in": ("input_blocks.0.0", {}),
        "time_embedding.linear_1": ("time_embed.0", {}),
        "time_embedding.linear_2": ("time_embed.2", {}),
        "conv_norm_out": ("out.0", {}),
        "conv_out": ("out.2", {}),
        # SDXL's size/crop conditioning (text_time) and class embeddings share the name label_emb.
        "add_embedding.linear_1": ("label_emb.0.0", {}),
        "add_embedding.linear_2": ("label_emb.0.2", {}),
        "class_embedding.linear_1": ("label_emb.0.0", {}),
        "class_embedding.linear_2": ("label_emb.0.2", {}),
        "mid_block.resnets.0": ("middle_block.0", UNET_RESNET),
        "mid_block.attentions.0": ("middle_block.1", {}),  # transformer names are the same in both layouts
        "mid_block.resnets.1": ("middle_block.2", UNET_RESNET),
    }
    step = 1
    last = len(unet.down_blocks) - 1
    for b, block in enumerate(unet.down_blocks):
        attentions = getattr(block, "attentions", None)
        if len(block.resnets) != lpb or (block.downsamplers is None) != (b == last):
            raise LayoutError(
                f"UNet: down block {b} is not {lpb} resnets plus a downsampler (except the last)"
            )
        for i in range(lpb):
            m[f"down_blocks.{b}.resnets.{i}"] = (f"input_blocks.{step}.0", UNET_RESNET)
            if attentions:
                m[f"down_blocks.{b}.attentions.{i}"] = (f"input_blocks.{step}.1", {})
            step += 1
        if block.downsamplers is not None:
            m[f"down_blocks.{b}.downsamplers.0.conv"] = (f"input_blocks.{step}.0.op", {})
            step += 1
    step = 0
    last = len(unet.up_blocks) - 1
    for b, block in enumerate(unet.up_blocks):
        attentions = getattr(block, "attentions", None)
        if len(block.resnets) != lpb + 1 or (block.upsamplers is None) != (b == last):
            raise LayoutError(
                f"UNet: up block {b} is not {lpb + 1} resnets plus an upsampler (except the last)"
            )
        for i in range(lpb + 1):
            m[f"up_blocks.{b}.resnets.{i}"] = (f"output_blocks.{step}.0", UNET_RESNET)
            if attentions:
                m[f"up_blocks.{b}.attentions.{i}"] = (f"output_blocks.{step}.1", {})
            step += 1
        if block.upsamplers is not None:
            # The upsampler joins the block's last step, after its attention if it has one.
            m[f"up_blocks.{b}.upsamplers.0.conv"] = (
                f"output_blocks.{step - 1}.{2 if attentions else 1}.conv",
                {},
            )
    return m


def unet_to_ldm(unet) -> dict[str, torch.Tensor]:
    """The UNet's weights under original names (without the ``model.diffusion_model.`` prefix)."""
    return _remap(unet.state_dict(), _unet_modules(unet), "UNet")


# ------------------------------------------------------------------------------------------------------ VAE


def _vae_modules(vae) -> dict[str, tuple[str, dict[str, str]]]:
    m: dict[str, tuple[str, dict[str, str]]] = {
        "quant_conv": ("quant_conv", {}),
        "post_quant_conv": ("post_quant_conv", {}),
    }
    for side in ("encoder", "decoder"):
        m[f"{side}.conv_in"] = (f"{side}.conv_in", {})
        m[f"{side}.conv_out"] = (f"{side}.conv_out", {})
        m[f"{side}.conv_norm_out"] = (f"{side}.norm_out", {})
        m[f"{side}.mid_block.resnets.0"] = (f"{side}.mid.block_1", VAE_RESNET)
        m[f"{side}.mid_block.resnets.1"] = (f"{side}.mid.block_2", VAE_RESNET)
        m[f"{side}.mid_block.attentions.0"] = (f"{side}.mid.attn_1", VAE_ATTENTION)
    for b, block in enumerate(vae.encoder.down_blocks):
        for i in range(len(block.resnets)):
            m[f"encoder.down_blocks.{b}.resnets.{i}"] = (f"encoder.down.{b}.block.{i}", VAE_RESNET)
        m[f"encoder.down_blocks.{b}.downsamplers.0.conv"] = (f"encoder.down.{b}.downsample.conv", {})
    # The original decoder numbers its levels from the lowest resolution up to the image, the reverse of
    # diffusers' up_blocks order (which follows the data flow).
    n = len(vae.decoder.up_blocks)
    for b, block in enumerate(vae.decoder.up_blocks):
        level = n - 1 - b
        for i in range(len(block.resnets)):
            m[f"decoder.up_blocks.{b}.resnets.{i}"] = (f"decoder.up.{level}.block.{i}", VAE_RESNET)
        m[f"decoder.up_blocks.{b}.upsamplers.0.conv"] = (f"decoder.up.{level}.upsample.conv", {})
    return m


def vae_to_ldm(vae) -> dict[str, torch.Tensor]:
    """The VAE's weights under original names (without ``first_stage_model.``).

    The original mid-block attention uses 1×1 convolutions, so its q/k/v/proj_out weights are stored as
    ``(C, C, 1, 1)``; diffusers' linear ``(C, C)`` weights are reshaped to that.
    """
    out = _remap(vae.state_dict(), _vae_modules(vae), "VAE")
    for key, tensor in out.items():
        is_attn_weight = key.endswith((".q.weight", ".k.weight", ".v.weight", ".proj_out.weight"))
        if ".mid.attn_1." in key and is_attn_weight and tensor.ndim == 2:
            out[key] = tensor[:, :, None, None]
    return out


# ----------------------------------------------------------------------------------------------------- CLIP


def _clip_keys(text_encoder) -> dict[str, torch.Tensor]:
    """HF CLIP text weights relative to ``text_model`` (``embeddings.…``, ``encoder.layers.…``).

    transformers ≥5.6 flattened ``CLIPTextModel`` (no ``text_model.`` prefix) while
    ``CLIPTextModelWithProjection`` still nests it; both are accepted. ``position_ids`` is a constant
    ``arange`` buffer that older versions saved; the model rebuilds it, so it is not written.
    """
    out = {}
    for key, tensor in text_encoder.state_dict().items():
        if key.endswith("position_ids"):
            continue
        out[key.removeprefix("text_model.")] = tensor
    return out


def clip_to_ldm(text_encoder, prefix: str) -> dict[str, torch.Tensor]:
    """SD1.5's text encoder and SDXL's first one keep the HF layout, under ``<prefix>`` (ends in text_model.)."""
    weights = _clip_keys(text_encoder)
    if "text_projection.weight" in weights:
        # The original layout for these encoders stores only the transformer; a projection would be dropped
        # on the way back, so refuse rather than lose it.
        raise LayoutError(
            "CLIP: this encoder has a text projection, which this slot of the layout cannot hold"
        )
    return {prefix + k: v for k, v in weights.items()}


def clip_to_open_clip(text_encoder) -> dict[str, torch.Tensor]:
    """SDXL's second text encoder in OpenCLIP's layout (without ``conditioner.embedders.1.model.``).

    OpenCLIP keeps one fused ``in_proj`` for q, k and v (in that order, stacked on the output dimension) and
    applies the projection as ``x @ text_projection``, so HF's ``Linear`` weight is stored transposed.
    """
    weights = _clip_keys(text_encoder)
    layer_names = {
        "layer_norm1": "ln_1",
        "layer_norm2": "ln_2",
        "self_attn.out_proj": "attn.out_proj",
        "mlp.fc1": "mlp.c_fc",
        "mlp.fc2": "mlp.c_proj",
    }
    out: dict[str, torch.Tensor] = {}
    qkv: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in weights.items():
        if key == "embeddings.token_embedding.weight":
            out["token_embedding.weight"] = tensor
        elif key == "embeddings.position_embedding.weight":
            out["positional_embedding"] = tensor
        elif key.startswith("final_layer_norm."):
            out["ln_final." + key.split(".", 1)[1]] = tensor
        elif key == "text_projection.weight":
            out["text_projection"] = tensor.T
        elif key.startswith("encoder.layers."):
            _, _, n, rest = key.split(".", 3)
            base = f"transformer.resblocks.{n}."
            if rest.startswith("self_attn.") and rest.split(".")[1] in ("q_proj", "k_proj", "v_proj"):
                _, proj, kind = rest.split(".")
                qkv.setdefault(f"{base}attn.in_proj_{kind}", {})[proj[0]] = tensor
                continue
            module, kind = rest.rsplit(".", 1)
            if module not in layer_names:
                raise LayoutError(f"OpenCLIP: no original-layout name for {key!r}")
            out[f"{base}{layer_names[module]}.{kind}"] = tensor
        else:
            raise LayoutError(f"OpenCLIP: no original-layout name for {key!r}")
    for key, parts in qkv.items():
        if set(parts) != {"q", "k", "v"}:
            raise LayoutError(f"OpenCLIP: {key} is missing one of q, k, v")
        out[key] = torch.cat([parts["q"], parts["k"], parts["v"]], dim=0)
    if "text_projection" not in out:
        raise LayoutError(
            "OpenCLIP: SDXL's second text encoder needs its text projection (CLIPTextModelWithProjection)"
        )
    return out


def load_open_clip_text_encoder(path: str | Path, config_dir: str | Path, dtype: torch.dtype | None = None):
    """SDXL's second text encoder, read from the checkpoint's ``conditioner.embedders.1.model.*`` weights.

    Pass the result as ``text_encoder_2=`` to ``StableDiffusionXLPipeline.from_single_file``. diffusers
    chooses where to load ``text_encoder_2`` from by testing for the *first* encoder's key and comparing only
    the width: when both encoders are equally wide (as in tiny test models; real SDXL has 768 vs 1280) it
    silently loads the first encoder's weights into the second and leaves its projection unloaded. Reading
    this encoder here removes the guess; the conversion itself is diffusers' own.
    """
    from accelerate import init_empty_weights
    from diffusers.loaders.single_file_utils import convert_open_clip_checkpoint, load_single_file_checkpoint
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection

    path = Path(path)
    if path.suffix.lower() == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:  # only this encoder's tensors, not the whole file
            names = [k for k in f.keys() if k.startswith(SDXL_OPEN_CLIP_PREFIX)]  # noqa: SIM118 (not iterable)
            checkpoint = {k: f.get_tensor(k) for k in names}
    else:
        checkpoint = load_single_file_checkpoint(str(path), local_files_only=True)
    if SDXL_OPEN_CLIP_PREFIX + "text_projection" not in checkpoint:
        raise LayoutError(f"{path} has no SDXL second text encoder ({SDXL_OPEN_CLIP_PREFIX}*)")
    config = CLIPTextConfig.from_pretrained(Path(config_dir) / "text_encoder_2", local_files_only=True)
    with init_empty_weights():  # parameters on meta; buffers (position_ids) stay real
        model = CLIPTextModelWithProjection(config)
    state = convert_open_clip_checkpoint(model, checkpoint, prefix=SDXL_OPEN_CLIP_PREFIX)
    model.load_state_dict(state, strict=True, assign=True)  # strict: a missing weight is an error
    if dtype is not None:
        model.to(dtype)  # type: ignore[arg-type]  # transformers' wrapper of to() hides nn.Module's dtype overload
    return model.eval()


# ------------------------------------------------------------------------------------------------- pipeline


def pipeline_to_ldm(pipe) -> dict[str, torch.Tensor]:
    """All of the pipeline's weights in one original-layout state dict (SD1.5 or SDXL, by its components)."""
    state: dict[str, torch.Tensor] = {}
    state.update({UNET_PREFIX + k: v for k, v in unet_to_ldm(pipe.unet).items()})
    state.update({VAE_PREFIX + k: v for k, v in vae_to_ldm(pipe.vae).items()})
    text_encoder_2 = getattr(pipe, "text_encoder_2", None)
    if text_encoder_2 is None:
        state.update(clip_to_ldm(pipe.text_encoder, SD15_CLIP_PREFIX))
    else:
        # A1111/ComfyUI and diffusers tell SDXL apart by the conditioner.embedders.* names written here.
        state.update(clip_to_ldm(pipe.text_encoder, SDXL_CLIP_PREFIX))
        state.update({SDXL_OPEN_CLIP_PREFIX + k: v for k, v in clip_to_open_clip(text_encoder_2).items()})
    return state


def save_single_file(pipe, path: str | Path) -> Path:
    """Write ``pipe``'s UNet, VAE and text encoder(s) as one original-layout ``.safetensors`` checkpoint.

    Tensors keep the pipeline's dtype; they are moved to the CPU and made contiguous (safetensors refuses
    strided views such as the transposed text projection). Only a tensor whose memory another one already
    uses (tied weights) is copied, as safetensors also refuses shared memory; copying everything would
    double the peak memory of an SDXL save.
    """
    from safetensors.torch import save_file

    path = Path(path)
    state: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for key, tensor in pipeline_to_ldm(pipe).items():
        if tensor.is_meta:
            raise LayoutError(f"cannot save {key!r}: it was never loaded (a meta tensor)")
        tensor = tensor.detach().to("cpu").contiguous()
        ptr = tensor.untyped_storage().data_ptr()
        if ptr in seen:
            tensor = tensor.clone()
            ptr = tensor.untyped_storage().data_ptr()
        seen.add(ptr)
        state[key] = tensor
    with atomic_target(path) as tmp:  # an interrupted save never leaves a truncated checkpoint behind
        save_file(state, str(tmp), metadata={"format": "pt"})
    return path


def write_config_folder(pipe, out_dir: str | Path) -> Path:
    """Write the pipeline's diffusers folder with every config and tokenizer but no weights.

    ``from_single_file(file, config=out_dir)`` builds each component from these configs and fills it from the
    single file, so the scheduler (and so the sampling), tokenizers and model shapes match the saved
    pipeline exactly, offline.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pipe.save_config(out)  # model_index.json: which class each component is
    for name, component in pipe.components.items():
        if component is None:
            continue
        sub = out / name
        if isinstance(component, torch.nn.Module) and hasattr(component, "save_config"):
            component.save_config(sub)  # type: ignore[operator]  # diffusers models: config.json only
        elif isinstance(component, torch.nn.Module) and hasattr(
            getattr(component, "config", None), "save_pretrained"
        ):
            component.config.save_pretrained(sub)  # type: ignore[union-attr,operator]  # transformers models: config.json only
        elif not isinstance(component, torch.nn.Module) and hasattr(component, "save_pretrained"):
            component.save_pretrained(sub)  # schedulers, tokenizers, image processors: no weights
        else:
            raise LayoutError(
                f"cannot write a config for pipeline component {name!r} ({type(component).__name__})"
            )
    return out
