"""The Flux.1 arguments an export writes so ``flux_train_network.py`` trains what ours trains: where it reads the
transformer, the text encoders and the VAE; the guidance; the noise levels (logit-normal, shifted by the base's
training shift), the prediction compared as it is; text encoder caching; and the per-layer-type dims and split_qkv
that keep ``networks.lora_flux`` to our ``lora.targets``.

sd-scripts reads FLUX.1's transformer from a single ``.safetensors`` file (Black Forest Labs' layout, or diffusers'
when it is FLUX.1-dev's three shards), and CLIP-L, T5-XXL and the VAE (``ae``) each from a file of its own
(``library/flux_utils.py``); ours never trains from a single Flux.1 file, so each is a placeholder to fill in."""

from __future__ import annotations

from typing import Any

from trainer.config.schema import Config
from trainer.kohya.flow import base_shift, cache_text_encoders, placeholders
from trainer.kohya.flux import TARGET_DIMS
from trainer.kohya.report import Report
from trainer.message import msg
from trainer.models.families.flux import SAMPLE_GUIDANCE, SCHNELL_T5_TOKENS, T5_TOKENS

MODEL_PLACEHOLDER = "<path to the FLUX.1 model .safetensors>"
FILES = ("clip_l", "t5xxl", "ae")
"""sd-scripts' arguments for the files ours reads from model.base's diffusers folder."""
SAMPLE_FLAGS = f"--g {SAMPLE_GUIDANCE:g} --l 1"
"""How ours draws FLUX.1-dev's samples, as sd-scripts' prompt flags: the embedded guidance, no classifier-free
guidance."""


def flux_args(cfg: Config, args: dict[str, Any], rep: Report) -> None:
    """Add the Flux.1 arguments to ``args`` (sd-scripts' config file) and say what each is in ``rep``."""
    base = cfg.model.base
    rep.entries[:] = [e for e in rep.entries if e["key"] != "model.base"]  # said again below, with a note
    placeholders(args, rep, base, MODEL_PLACEHOLDER, msg("kohya.flux.export.model", base=base), FILES,
                 msg("kohya.flux.export.files"))
    shift = base_shift("flux", base)
    args.update(guidance_scale=cfg.model.guidance, timestep_sampling="shift", sigmoid_scale=1.0,
                discrete_flow_shift=shift, model_prediction_type="raw")
    rep.mapped("model.guidance", cfg.model.guidance, "guidance_scale", cfg.model.guidance,
               msg("kohya.flux.export.guidance"))
    rep.mapped("model.family", "flux", "timestep_sampling, sigmoid_scale", ["shift", 1.0],
               msg("kohya.flux.export.timesteps"))
    rep.mapped("model.family", "flux", "discrete_flow_shift", shift, msg("kohya.flux.export.shift"))
    rep.mapped("model.family", "flux", "model_prediction_type", "raw", msg("kohya.flux.export.prediction"))
    rep.mapped("model.family", "flux", "t5xxl_max_token_length, apply_t5_attn_mask", None,
               msg("kohya.flux.export.t5", tokens=T5_TOKENS, schnell=SCHNELL_T5_TOKENS))
    cache_text_encoders(cfg, args, rep, msg("kohya.flux.export.no_cache"))
    targets = cfg.lora.targets
    dims = [f"{d}=0" for d in TARGET_DIMS.get(targets, TARGET_DIMS["attn"])] + ["split_qkv=True"]
    args["network_args"] = [*args.get("network_args", []), *dims]
    note = {"attn_ff": None, "attn": msg("kohya.flux.export.attn")}.get(targets, msg("kohya.flux.export.cross_kv"))
    if note is None:
        rep.mapped("lora.targets", targets, "network_args", dims, msg("kohya.flux.export.targets"))
    else:
        rep.changed("lora.targets", targets, "network_args", dims, note)
    rep.changed("sample.guidance", cfg.sample.guidance, "sample_prompts --g, --l", [SAMPLE_GUIDANCE, 1],
                msg("kohya.flux.export.samples", guidance=SAMPLE_GUIDANCE))
