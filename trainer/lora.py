"""Attaching LoRA adapters to the UNet and text encoders with peft, and reading them back.

``peft.inject_adapter_in_model`` is used for every model (not ``text_encoder.add_adapter``, which needs a
newer peft than PyPI has with transformers >= 5.24). Trainable params are upcast to fp32 here, whatever the
frozen weights' dtype: AdamW state and EMA shadow follow their dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from peft import LoraConfig, inject_adapter_in_model
from peft.utils import get_peft_model_state_dict, set_peft_model_state_dict

from .embedding import TriggerEmbedding

EMBEDDING_ROLE = "emb"

UNET_TARGETS = {
    "attn": ["to_q", "to_k", "to_v", "to_out.0"],
    "attn_ff": ["to_q", "to_k", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2", "proj_in", "proj_out"],
}
TE_TARGETS = {
    "attn": ["q_proj", "k_proj", "v_proj", "out_proj"],
    "attn_ff": ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"],
}


@dataclass
class LoraModules:
    """The models that carry adapters, by role: ``unet``, ``te`` (SD1.5) or ``te1``/``te2`` (SDXL)."""

    models: dict[str, torch.nn.Module]
    rank: int
    alpha: float
    targets: str
    config_by_role: dict[str, dict] = field(default_factory=dict)

    def trainable(self, role: str) -> list[torch.nn.Parameter]:
        return [p for p in self.models[role].parameters() if p.requires_grad]

    def named_trainable(self) -> list[tuple[str, torch.nn.Parameter]]:
        out = []
        for role, m in self.models.items():
            out.extend((f"{role}.{n}", p) for n, p in m.named_parameters() if p.requires_grad)
        return out

    @property
    def embedding(self) -> TriggerEmbedding | None:
        """The trigger embedding being trained (role ``emb``), if any."""
        m = self.models.get(EMBEDDING_ROLE)
        return m if isinstance(m, TriggerEmbedding) else None

    def state_dicts(self) -> dict[str, dict[str, torch.Tensor]]:
        """peft state dicts per role (keys without the adapter name; the trigger embedding's own state dict),
        detached fp32 copies on the CPU."""
        def state(role: str, m: torch.nn.Module) -> dict[str, torch.Tensor]:
            return m.state_dict() if role == EMBEDDING_ROLE else get_peft_model_state_dict(m)

        return {
            role: {k: v.detach().float().cpu().clone() for k, v in state(role, m).items()}
            for role, m in self.models.items()
        }

    def adapter_state_dicts(self) -> dict[str, dict[str, torch.Tensor]]:
        """``state_dicts`` without the trigger embedding: what the LoRA files hold."""
        return {role: sd for role, sd in self.state_dicts().items() if role != EMBEDDING_ROLE}

    def load_state_dicts(self, states: dict[str, dict[str, torch.Tensor]]) -> None:
        for role, sd in states.items():
            if role == EMBEDDING_ROLE:
                self.models[role].load_state_dict(sd)
                continue
            result = set_peft_model_state_dict(self.models[role], sd)
            unexpected = getattr(result, "unexpected_keys", None) or []
            if unexpected:
                raise RuntimeError(f"LoRA state for {role} has keys this model lacks: {unexpected[:3]}")


def _lora_config(rank: int, alpha: float, targets: list[str], dropout: float) -> LoraConfig:
    return LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        init_lora_weights="gaussian",  # A random, B zero: the adapter starts as a no-op, so step 0 = the base
        target_modules=targets,
    )


def attach_lora(pipe, lora_cfg, family: str, seed: int, trigger: str = "") -> LoraModules:
    """Freeze the pipeline, inject adapters (UNet, plus text encoders when asked) and upcast them to fp32; with
    ``lora.trigger_embedding``, also the trigger's embedding deltas (role ``emb``), hooked into the encoders."""
    for part in ("unet", "vae", "text_encoder", "text_encoder_2"):
        m = getattr(pipe, part, None)
        if m is not None:
            m.requires_grad_(False)
    models: dict[str, torch.nn.Module] = {"unet": pipe.unet}
    if lora_cfg.train_text_encoder:
        if family == "sdxl":
            models["te1"], models["te2"] = pipe.text_encoder, pipe.text_encoder_2
        else:
            models["te"] = pipe.text_encoder
    configs = {}
    torch.manual_seed(seed)  # the adapters' random init is part of the run's seed
    for role, m in models.items():
        targets = UNET_TARGETS[lora_cfg.targets] if role == "unet" else TE_TARGETS[lora_cfg.targets]
        cfg = _lora_config(lora_cfg.rank, lora_cfg.alpha, targets, lora_cfg.dropout)
        inject_adapter_in_model(cfg, m, adapter_name="default")
        configs[role] = {"r": lora_cfg.rank, "lora_alpha": float(lora_cfg.alpha), "target_modules": targets}
    if lora_cfg.trigger_embedding:
        encoders = [pipe.text_encoder] + ([pipe.text_encoder_2] if family == "sdxl" else [])
        tokenizers = [pipe.tokenizer] + ([pipe.tokenizer_2] if family == "sdxl" else [])
        emb = TriggerEmbedding(encoders, tokenizers, trigger)
        models[EMBEDDING_ROLE] = emb.to(encoders[0].device).install()
    mods = LoraModules(models, lora_cfg.rank, float(lora_cfg.alpha), lora_cfg.targets, configs)
    for _, p in mods.named_trainable():
        p.data = p.data.float()
    return mods


def set_lora_scale(mods: LoraModules, scale: float) -> None:
    """Scale every adapter's output (1.0 = as trained, 0.0 = the base model). Used by sampling."""
    from peft.tuners.lora import LoraLayer

    for m in mods.models.values():
        for layer in m.modules():
            if isinstance(layer, LoraLayer):
                for name in layer.scaling:
                    layer.scaling[name] = scale * layer.lora_alpha[name] / layer.r[name]
