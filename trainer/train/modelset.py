"""The models a run trains: the base pipeline on its device and precision, the family's adapter, the LoRA
attached to it, the text conditioner, and the list of tensors the optimizer moves.

:func:`load_models` builds a :class:`TrainingModels` from the config; every other part of the trainer (feeder,
validation, model measures, sampler, checkpointer, recovery) is given it and reads what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from trainer.config.schema import Config
from trainer.data.batches import captions_are_augmented
from trainer.errors import UserError
from trainer.message import msg
from trainer.models.base import BaseInfo, load_pipeline
from trainer.models.blockswap import BlockSwap
from trainer.models.conditioning import ForeseenText, TextConditioner
from trainer.models.families.noise import NoiseSchedule
from trainer.models.family import ModelFamily
from trainer.models.family import family as model_family
from trainer.models.lora import LoraModules, attach_lora
from trainer.models.lowmem import is_low_memory, prepare_low_memory, set_compute_dtype
from trainer.models.precision import PrecisionPlan, decide_precision, make_grad_scaler, resolve_device
from trainer.sampling import sampling_pipeline
from trainer.train.distributed import Dist


@dataclass(eq=False)
class TrainingModels:
    device: torch.device
    precision: PrecisionPlan  # replaced when a rollback switches fp16 → bf16 (:meth:`switch_precision`)
    base_info: BaseInfo
    pipe: Any  # the diffusers pipeline that holds every component
    adapter: ModelFamily  # the family's adapter: everything family-specific goes through it
    denoiser: Any  # the model the LoRA trains (the UNet, or a transformer)
    schedule: NoiseSchedule  # how the denoiser is trained: timesteps, noise, target, weights
    lora: LoraModules
    text: TextConditioner
    trainable: list[torch.nn.Parameter]
    named_trainable: list[tuple[str, torch.nn.Parameter]]
    train_modules: dict[str, torch.nn.Module]  # the LoRA's models as the processes see them (wrapped for DDP)
    swap: BlockSwap | None = None  # model.block_swap's blocks, kept in CPU memory between uses

    @property
    def family(self) -> str:
        return self.base_info.family

    def modules(self) -> list[torch.nn.Module]:
        """Every model that holds LoRA weights (for eval mode and random-state guards while measuring)."""
        return list(self.lora.models.values())

    def new_scaler(self, config: Config):
        """A fresh fp16 loss scaler for the current precision (None without fp16)."""
        return make_grad_scaler(self.precision, config.train.fp16_init_scale, config.train.fp16_growth_interval)

    def switch_precision(self, precision: str) -> None:
        """fp16 → bf16 mid-run: every frozen weight recast (the denoiser and the text encoders, with or without
        LoRA, and the VAE) and the autocast dtype changed; text embeddings cached under the old precision are
        dropped. The caller moves the loss scaler, the guard and the latent caches along."""
        self.precision = decide_precision(precision, self.device, self.pipe.vae.config.get("force_upcast", False))
        for model in self.adapter.frozen_components(self.pipe):
            if model is self.pipe.vae:
                continue  # the VAE has its own dtype, below
            for p in model.parameters():
                if not p.requires_grad and p.is_floating_point() and p.element_size() > 1:  # fp8 storage stays
                    p.data = p.data.to(self.precision.weight_dtype)
        set_compute_dtype(self.denoiser, self.precision.weight_dtype)  # model.base_quant's layers
        self.pipe.vae.to(dtype=self.precision.vae_dtype)
        self.text.clear_cache()


def load_models(cfg: Config, dist: Dist, foreseen: ForeseenText | None = None) -> TrainingModels:
    """The base model on the run's device, in the precision the config and the device allow, with the LoRA
    attached, set to train (gradient checkpointing, compile and memory layout as the config says).

    With ``model.offload_text_encoders`` the text encoders come to the device alone, encode ``foreseen`` and go to
    the CPU before the rest arrives: the memory plan's encoding phase, then its training phase."""
    device = resolve_device(cfg.train.device) if dist.world_size == 1 else dist.device
    precision = decide_precision(cfg.train.precision, device)
    pipe, base_info = load_pipeline(cfg.model, precision.weight_dtype)
    if base_info.distilled and not cfg.model.allow_distilled:
        raise UserError(msg("error.train.distilled", base=cfg.model.base, reason=base_info.distilled_reason))
    family = base_info.family
    precision = decide_precision(cfg.train.precision, device, pipe.vae.config.get("force_upcast", False))
    adapter = model_family(family)
    # a trained trigger embedding changes the text encoder's output every step, like a text-encoder LoRA
    te_frozen = not (cfg.lora.train_text_encoder or cfg.lora.trigger_embedding)
    text = TextConditioner(pipe, family, device, cache=te_frozen and not captions_are_augmented(cfg.dataset),
                           offload=cfg.model.offload_text_encoders)
    for encoder in text.modules:
        encoder.eval()  # frozen: no dropout (T5's config has some); a text-encoder LoRA is set to train below
    if text.offload:
        adapter.prepare_weights(pipe, precision.weight_dtype)
        sampler = sampling_pipeline(pipe, family, base_info.prediction_type).pipe
        text.encode_up_front(foreseen or ForeseenText(), precision.autocast(), sampler)
    denoiser = adapter.denoiser(pipe)
    low = is_low_memory(cfg.model)  # the denoiser is placed by prepare_low_memory, quantized or in part
    if text.offload or low:
        for component in pipe.components.values():
            kept = (text.offload and any(component is e for e in text.modules)) or (low and component is denoiser)
            if isinstance(component, torch.nn.Module) and not kept:
                component.to(device)
    else:
        pipe.to(device)
    if not text.offload:
        adapter.prepare_weights(pipe, precision.weight_dtype)
    pipe.vae.to(dtype=precision.vae_dtype)
    adapter.apply_model_settings(pipe, cfg.model)
    swap = prepare_low_memory(denoiser, adapter, cfg.model, device, precision.weight_dtype) if low else None
    schedule = adapter.noise_schedule(pipe.scheduler.config, base_info.prediction_type)
    lora = attach_lora(pipe, cfg.lora, family, cfg.train.seed, cfg.dataset.trigger)
    if swap is not None:
        swap.settle(denoiser)
    if cfg.train.channels_last and device.type == "cuda" and adapter.conv_lora:
        # a UNet's convolutions want NHWC on tensor cores; on a CPU it measured 4-7 % slower per step
        # (bench/bench_step.py models)
        denoiser.to(memory_format=torch.channels_last)
    if cfg.train.compile:
        denoiser.forward = torch.compile(denoiser.forward)
    denoiser_role = adapter.denoiser_component
    if cfg.train.gradient_checkpointing:
        denoiser.enable_gradient_checkpointing()
        for role, m in lora.models.items():
            if role != denoiser_role and hasattr(m, "gradient_checkpointing_enable"):
                m.gradient_checkpointing_enable()  # type: ignore[operator]  # found by hasattr; torch types it Tensor | Module
    denoiser.train()
    for role, m in lora.models.items():
        if role != denoiser_role:
            m.train()
    named = lora.named_trainable()
    return TrainingModels(
        device=device, precision=precision, base_info=base_info, pipe=pipe, adapter=adapter, denoiser=denoiser,
        schedule=schedule, lora=lora, text=text, trainable=[p for _, p in named], named_trainable=named,
        train_modules=dist.wrap(lora.models), swap=swap,
    )
