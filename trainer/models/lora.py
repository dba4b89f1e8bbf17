"""Attaching LoRA adapters to the UNet and text encoders with peft, and reading them back.

``peft.inject_adapter_in_model`` is used for every model (not ``text_encoder.add_adapter``, which needs a
newer peft than PyPI has with transformers >= 5.24). Trainable params are upcast to fp32 here, whatever the
frozen weights' dtype: AdamW state and EMA shadow follow their dtype.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from peft import LoraConfig, inject_adapter_in_model
from peft.utils import get_peft_model_state_dict, set_peft_model_state_dict

from trainer.errors import UserError
from trainer.message import msg
from trainer.models.embedding import TriggerEmbedding
from trainer.models.family import family as model_family

EMBEDDING_ROLE = "emb"


@dataclass
class LoraModules:
    """The models that carry adapters, by role: the denoiser's (its pipeline attribute: ``unet``,
    ``transformer``), ``te`` (SD1.5) or ``te1``/``te2`` (SDXL), and ``emb`` (the trigger embedding)."""

    models: dict[str, torch.nn.Module]
    rank: int
    alpha: float
    targets: str
    config_by_role: dict[str, dict] = field(default_factory=dict)

    def trainable(self, role: str) -> list[torch.nn.Parameter]:
        return [p for p in self.models[role].parameters() if p.requires_grad]

    def named_trainable(self) -> list[tuple[str, torch.nn.Parameter]]:
        out: list[tuple[str, torch.nn.Parameter]] = []
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


# The resnets' convolutions (kohya's "LoCon" set, without the down/upsamplers), matched on full module names.
CONV_PATTERN = r"resnets\.\d+\.(conv1|conv2|conv_shortcut)"


def conv_targets(unet: torch.nn.Module, blocks: list[str]) -> list[str]:
    """Full names of the UNet's resnet convolutions that get LoRA: those under ``blocks`` (all when empty)."""
    convs = [name for name, module in unet.named_modules()
             if isinstance(module, torch.nn.Conv2d) and re.fullmatch(r"(.*\.)?" + CONV_PATTERN, name)]
    if not blocks:
        return convs
    chosen = []
    for block in blocks:
        under = [n for n in convs if n.startswith(block.rstrip(".") + ".")]
        if not under:
            names = sorted({re.sub(r"\.resnets\..*", "", n) for n in convs})
            raise UserError(msg("error.lora.no_resnet", block=block, names=", ".join(names)))
        chosen += [n for n in under if n not in chosen]
    return chosen


def adapter_config(lora_cfg, role: str, model: torch.nn.Module, family: str) -> dict:
    """The peft LoraConfig arguments of one role (also written as the diffusers file's adapter metadata)."""
    adapter = model_family(family)
    out: dict = {"r": lora_cfg.rank, "lora_alpha": float(lora_cfg.alpha),
                 "target_modules": adapter.lora_targets(role, lora_cfg.targets)}
    if role == adapter.denoiser_component and lora_cfg.conv_rank > 0:
        if not adapter.conv_lora:
            raise UserError(msg("error.lora.no_conv", family=adapter.label))
        convs = conv_targets(model, lora_cfg.conv_blocks)
        out["target_modules"] += convs
        # sd-scripts' rule, by the module's kind: k×k convolutions (k > 1) take conv_dim / conv_alpha; linear
        # layers and 1×1 convolutions (the resnets' conv_shortcut, SD1.5's proj_in / proj_out) the network's
        # rank / alpha. peft looks each module up in rank_pattern / alpha_pattern with ``(.*\.)?(key)$``, so
        # an escaped full name matches that module alone.
        wide = [re.escape(n) for n in convs if max(model.get_submodule(n).kernel_size) > 1]  # type: ignore[arg-type]  # convs are nn.Conv2d
        out["rank_pattern"] = dict.fromkeys(wide, lora_cfg.conv_rank)
        out["alpha_pattern"] = dict.fromkeys(wide, float(lora_cfg.effective_conv_alpha))
    return out


def _lora_config(kwargs: dict, dropout: float) -> LoraConfig:
    # gaussian: A random, B zero, so the adapter starts as a no-op and step 0 = the base
    return LoraConfig(**kwargs, lora_dropout=dropout, init_lora_weights="gaussian")


def attach_lora(pipe, lora_cfg, family: str, seed: int, trigger: str = "") -> LoraModules:
    """Freeze the pipeline, inject adapters (UNet, plus text encoders when asked) and upcast them to fp32; with
    ``lora.trigger_embedding``, also the trigger's embedding deltas (role ``emb``), hooked into the encoders."""
    adapter = model_family(family)
    for m in adapter.frozen_components(pipe):
        m.requires_grad_(False)
    models: dict[str, torch.nn.Module] = {adapter.denoiser_component: adapter.denoiser(pipe)}
    if lora_cfg.train_text_encoder:
        for te in adapter.trainable_text_encoders:
            if getattr(pipe, te.component, None) is not None:
                models[te.lora_role] = getattr(pipe, te.component)
    configs = {}
    torch.manual_seed(seed)  # the adapters' random init is part of the run's seed
    for role, m in models.items():
        configs[role] = adapter_config(lora_cfg, role, m, family)
        inject_adapter_in_model(_lora_config(configs[role], lora_cfg.dropout), m, adapter_name="default")
    if lora_cfg.trigger_embedding:
        pairs = [(getattr(pipe, te.tokenizer), getattr(pipe, te.component)) for te in adapter.trainable_text_encoders
                 if getattr(pipe, te.component, None) is not None]
        encoders = [enc for _, enc in pairs]
        emb = TriggerEmbedding(encoders, [tok for tok, _ in pairs], trigger)
        models[EMBEDDING_ROLE] = emb.to(encoders[0].device).install()
    mods = LoraModules(models, lora_cfg.rank, float(lora_cfg.alpha), lora_cfg.targets, configs)
    for _, p in mods.named_trainable():
        p.data = p.data.float()
    for role, m in models.items():
        if role != EMBEDDING_ROLE:
            use_lean_linear_forward(m)
    return mods


def _lean_linear_forward(self, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """peft's LoRA ``Linear.forward`` for the one-adapter training case, in three ``F.linear`` calls.

    The same arithmetic as peft's (x cast to the adapter's dtype, ``B(A(dropout(x))) * scaling`` added to the
    base's output, the sum cast back to the base's dtype) without its per-call bookkeeping (adapter lookups,
    variant checks, submodule calls), which is a few percent of a small model's step. Anything unusual, such
    as merged or disabled adapters or extra arguments, goes through peft's own forward.
    """
    if args or kwargs or self.merged or self.disable_adapters or self.active_adapters != ["default"]:
        return type(self).forward(self, x, *args, **kwargs)
    base = self.base_layer
    out = F.linear(x, base.weight, base.bias)
    a = self.lora_A["default"].weight
    h = self.lora_dropout["default"](x.to(a.dtype))
    return (out + F.linear(F.linear(h, a), self.lora_B["default"].weight) * self.scaling["default"]).to(out.dtype)


def use_lean_linear_forward(model: torch.nn.Module) -> None:
    """Give every plain LoRA ``Linear`` of ``model`` (a ``torch.nn.Linear`` base, one adapter, no DoRA-like
    variant) the lean forward above. Quantized or otherwise special bases keep peft's."""
    from peft.tuners.lora.layer import Linear as LoraLinear

    for layer in model.modules():
        if (isinstance(layer, LoraLinear) and type(layer.base_layer) is torch.nn.Linear
                and list(layer.lora_A) == ["default"] and not getattr(layer, "lora_variant", None)
                and not getattr(layer, "fan_in_fan_out", False)):
            layer.forward = types.MethodType(_lean_linear_forward, layer)  # type: ignore[method-assign]  # this layer's alone


def set_lora_scale(mods: LoraModules, scale: float) -> None:
    """Scale every adapter's output (1.0 = as trained, 0.0 = the base model). Used by sampling."""
    from peft.tuners.lora import LoraLayer

    for m in mods.models.values():
        for layer in m.modules():
            if isinstance(layer, LoraLayer):
                for name in layer.scaling:
                    layer.scaling[name] = scale * layer.lora_alpha[name] / layer.r[name]
