"""Will it fit: the peak device memory a config needs, part by part, against what the device has free.

The parts are counted, not guessed: frozen weights from the parameter counts of the base's own configs (the
models built on the meta device, no weights read), LoRA weights, gradients, optimizer state and EMA from the
adapters' real shapes, and the UNet's activations from coefficients measured at the allocator on the real
SD1.5 / SDXL architectures (``bench/bench_memory.py``, each family's ``ModelFamily.activations``). The verdict compares the
total with the free memory the device reports (``torch.cuda.mem_get_info`` on CUDA, available system memory on
a CPU): *fits* with a margin, *tight* within it, *spill* past it (on a GPU the driver may spill into shared
system memory and each step slows several-fold; a CPU swaps).

:func:`fit_to_memory` (in :mod:`trainer.plan.memory_fit`) picks the changes that bring a config under a budget.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainer.config.choices import optimizer_spec
from trainer.config.schema import Config
from trainer.errors import UserError
from trainer.message import Msg, msg
from trainer.models.base import base_config_folder, classify_base
from trainer.models.family import chosen_family, family_of_hub_id, family_of_pipeline
from trainer.models.family import family as model_family
from trainer.models.lora import CONV_PATTERN
from trainer.models.precision import decide_precision, resolve_device
from trainer.plan.memory_lowmem import denoiser_weights

GIB = 2**30
TIGHT_SHARE = 0.85
"""Below this share of the free memory the plan fits; up to all of it, tight (the allocator's fragmentation
and the sampling pass live in the rest)."""
RUNTIME_BYTES = {"cuda": int(0.75 * GIB), "mps": int(0.5 * GIB), "cpu": int(0.4 * GIB)}
"""The CUDA context, cuBLAS/cuDNN workspaces and the allocator's rounding on a GPU; the interpreter and the
libraries on a CPU."""

# Activation bytes of one sample's UNet forward + backward (what the step adds beyond its LoRA gradients),
# ``c0 + c1 × latent pixels``, by compute precision and gradient checkpointing, are each family's own
# (``ModelFamily.activations``, measured by bench/bench_memory.py on the real architectures), with the summed
# UNet widths they were measured on (``ModelFamily.reference_widths``): another UNet's activations scale with its
# widths. The CPU's bf16 autocast keeps norm outputs in bf16 where CUDA's makes them fp32: on a GPU the half rows
# may read low (bench/gpu_check.sh part 5 compares with CUDA's max_memory_allocated).
# A trained text encoder's forward + backward, bytes per caption (77 tokens), by encoder and precision.
# CLIP-L measured (batch 2 less batch 1); OpenCLIP bigG (SDXL's second) not measured: CLIP-L's scaled by layers
# × width (32 × 1280 against 12 × 768, 4.44×).
TEXT_ACTIVATIONS: dict[tuple[str, str], float] = {("clip_l", "fp32"): 46_424_848, ("clip_l", "half"): 27_491_920,
                                                  ("clip_g", "fp32"): 4.44 * 46_424_848,
                                                  ("clip_g", "half"): 4.44 * 27_491_920,
                                                  # T5 (SD3.5) and Qwen3 (Z-Image) never train here: no
                                                  # activations kept for a backward
                                                  ("t5", "fp32"): 0.0, ("t5", "half"): 0.0,
                                                  ("qwen3", "fp32"): 0.0, ("qwen3", "half"): 0.0}
NEVER_TRAINED = frozenset({"t5", "qwen3"})  # text encoder kinds that take no LoRA (their families' TextEncoder.trainable)
# The VAE encoding pictures without gradients (latents not cached): bytes per picture, c0 + c1 × pixels, fp32
# (measured at 128 and 256 px: 50.5 and 201.6 MB).
VAE_ENCODE: tuple[float, float] = (0.0, 3076.0)
# A frozen text encoder encoding one caption without gradients (model.offload_text_encoders encodes them before
# training): the live tensor bytes above its weights, by encoder and precision, at full width on the CPU
# (bench/memory_text_encode.py: 2 and 3 layers carried to the real depth; the CLIPs keep every layer's hidden
# states, as SDXL and SD3.5 ask for the penultimate one; T5's peak is one layer's and does not grow with depth).
# The encoders run one after another, so their sum is an upper bound; two captions at once measured 1.8-2.0×.
TEXT_ENCODE: dict[tuple[str, str], float] = {("clip_l", "fp32"): 7_096_320, ("clip_l", "half"): 3_548_160,
                                              ("clip_g", "fp32"): 16_558_080, ("clip_g", "half"): 8_279_040,
                                              ("t5", "fp32"): 85_983_232, ("t5", "half"): 42_991_616,
                                              # Z-Image's Qwen3-4B: 512 tokens, all 37 hidden states kept
                                              # (bench/memory_text_encode.py qwen3; two captions 2.00×)
                                              ("qwen3", "fp32"): 410_525_696, ("qwen3", "half"): 205_266_944}

@dataclass
class MemoryPlan:
    """Estimated peak bytes by part, their total, and the device's free bytes with the verdict.

    With the text encoders moved off the device after encoding the captions (``model.offload_text_encoders``) a
    run has two phases: ``encode`` (the text encoders alone on the device, before the denoiser comes) and the
    training that follows (``parts``, then without the encoders); ``total`` is the larger, ``phase`` says which."""

    parts: dict[str, int]
    total: int
    device: str
    free: int | None
    verdict: str  # fits | tight | spill | unknown
    device_total: int | None = None
    resolution: tuple[int, int] = (0, 0)
    """The largest bucket (width, height): the step that peaks."""
    notes: list[Msg] = field(default_factory=list)
    warnings: list[Msg] = field(default_factory=list)
    """What the person should know about this base on this device (shown under the table)."""
    encode: dict[str, int] | None = None
    """The encoding phase's parts, when there is one."""
    phase: str = "train"  # the phase ``total`` is the peak of: train | encode
    low_memory: dict[str, Any] | None = None
    """model.base_quant's and model.block_swap's figures: slowdowns, pinned CPU memory (trainer.plan.memory_lowmem)."""

    @property
    def train_total(self) -> int:
        return sum(self.parts.values())

    @property
    def encode_total(self) -> int:
        return sum(self.encode.values()) if self.encode else 0

    def device_words(self) -> Msg | str:
        """The device for people: a memory shared with the system is worded (``memory.device.<type>``), a GPU's
        own name stays as it is."""
        kind = next((k for k, name in SHARED_MEMORY.items() if name == self.device), None)
        return msg(f"memory.device.{kind}") if kind else self.device

    def to_json(self) -> dict[str, Any]:
        return {"parts": dict(self.parts), "total": self.total, "device": self.device, "free": self.free,
                "device_total": self.device_total, "verdict": self.verdict, "resolution": list(self.resolution),
                "notes": [n.to_json() for n in self.notes], "warnings": [w.to_json() for w in self.warnings],
                **({"phases": {"encode": self.encode_total, "train": self.train_total}, "peak_phase": self.phase,
                    "encode_parts": dict(self.encode)} if self.encode else {}),
                **({"low_memory": self.low_memory} if self.low_memory else {})}


def gib(n: int | float | None) -> str:
    if n is None:
        return "?"
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB / 10 else f"{n / 2**20:.0f} MiB"


# ------------------------------------------------------------------------------------- model shapes


@dataclass(frozen=True)
class ModelShapes:
    """Parameter counts of a base's parts and the shapes LoRA can attach to, read from its configs."""

    family: str
    unet: int
    text_encoders: tuple[tuple[str, int], ...]  # (kind clip_l | clip_g, params)
    vae: int
    vae_scale: int  # pixels per latent pixel along a side
    vae_force_upcast: bool
    widths: int  # the UNet's summed block widths (activations scale with them)
    unet_layers: tuple[tuple[str, str, tuple[int, ...]], ...]  # (name, Linear | Conv2d, weight shape)
    te_layers: tuple[tuple[tuple[str, tuple[int, ...]], ...], ...]  # per text encoder: (name, weight shape)
    denoiser_config: dict[str, Any] = field(default_factory=dict)  # what the family's notes on the base read
    blocks: tuple[tuple[str, int], ...] | None = None  # the denoiser's repeated blocks: (name, params); None: no swap


def _layers(model: torch.nn.Module) -> tuple:
    return tuple((name, type(m).__name__, tuple(m.weight.shape)) for name, m in model.named_modules()
                 if isinstance(m, torch.nn.Linear | torch.nn.Conv2d))


@functools.lru_cache(maxsize=8)
def model_shapes(source: str, family: str) -> ModelShapes:
    """Build the UNet, text encoder(s) and VAE of ``source`` (a config folder, or "tiny-<family>") on the meta
    device and count them. Cached: the plan asks on every change of a setting."""
    adapter = model_family(family)
    with torch.device("meta"):
        if source.startswith("tiny-"):
            from trainer.models.tiny import build_tiny_pipeline

            pipe = build_tiny_pipeline(family)
            unet, vae = adapter.denoiser(pipe), pipe.vae
            encoders = [enc for tok, enc in adapter.text_pairs(pipe) if tok is not None and enc is not None]
        else:
            unet, vae, encoders = adapter.models_from_configs(Path(source))
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    names = {id(m): n for n, m in unet.named_modules()}
    blocks = adapter.denoiser_blocks(unet)
    kinds = tuple((_encoder_kind(e), count(e)) for e in encoders)
    te_layers = tuple(tuple((n, s) for n, _, s in _layers(e)) for e in encoders)
    return ModelShapes(
        family=family, unet=count(unet), text_encoders=kinds, vae=count(vae),
        vae_scale=2 ** (len(vae.config.block_out_channels) - 1),
        vae_force_upcast=bool(vae.config.get("force_upcast", False)),
        widths=adapter.activation_width(unet.config), unet_layers=_layers(unet), te_layers=te_layers,
        denoiser_config=dict(unet.config),
        blocks=None if blocks is None else tuple((names[id(b)], count(b)) for b in blocks),
    )


def _encoder_kind(encoder) -> str:
    """t5 | qwen3 | clip_g | clip_l, from the config's ``model_type`` (what transformers itself dispatches on;
    any T5 or Qwen3 class reads the same); a CLIP text model is G from its width (SDXL and SD3 have one of each)."""
    kind = encoder.config.model_type
    if kind == "t5":
        return "t5"
    if kind == "qwen3":
        return "qwen3"
    return "clip_g" if encoder.config.hidden_size >= 1280 else "clip_l"


def shapes_for(model_cfg) -> ModelShapes:
    """The shapes of ``cfg.model``'s base from its configs: the tiny models, the demo's folder, a diffusers
    folder, a single file's config folder, or (hub ids) the family's shipped configs."""
    kind = classify_base(model_cfg.base)
    chosen = chosen_family(model_cfg.family)
    if kind == "tiny":
        family = chosen.name if chosen else model_cfg.base.split("-", 1)[1]
        return model_shapes(model_cfg.base if family in model_cfg.base else f"tiny-{family}", family)
    folder = base_config_folder(model_cfg, kind)
    if folder is None:  # a hub id: the family's shipped configs
        chosen = chosen or family_of_hub_id(model_cfg.base)
        folder = chosen.config_dir
    if chosen is None:
        index = folder / "model_index.json"
        try:
            chosen = family_of_pipeline(json.loads(index.read_text(encoding="utf-8")).get("_class_name", ""))
        except (OSError, ValueError):
            raise UserError(msg("error.base.no_index_for_memory", folder=folder)) from None
    if not (folder / chosen.denoiser_component / "config.json").is_file():
        folder = chosen.config_dir
    return model_shapes(str(folder), chosen.name)


def _matches(name: str, keys: list[str]) -> bool:
    # peft's rule for a list of target names: the whole name, or its dotted tail
    return any(name == k or name.endswith("." + k) for k in keys)


def lora_tensors(cfg: Config, shapes: ModelShapes) -> list[int]:
    """Element counts of every LoRA tensor (A and B of each adapted layer) the config trains."""
    lc = cfg.lora
    out: list[int] = []
    adapter = model_family(shapes.family)
    keys = adapter.lora_targets(adapter.denoiser_component, lc.targets)
    for name, kind, shape in shapes.unet_layers:
        is_conv_target = (lc.conv_rank > 0 and kind == "Conv2d" and re.fullmatch(r"(.*\.)?" + CONV_PATTERN, name)
                          and (not lc.conv_blocks or any(name.startswith(b.rstrip(".") + ".") for b in lc.conv_blocks)))
        if not (is_conv_target or _matches(name, keys)):
            continue
        rank = lc.conv_rank if kind == "Conv2d" and max(shape[2:], default=1) > 1 else lc.rank
        fan_in = shape[1] * (shape[2] * shape[3] if kind == "Conv2d" else 1)
        out += [rank * fan_in, shape[0] * rank]
    if lc.train_text_encoder:
        for (kind, _), layers in zip(shapes.text_encoders, shapes.te_layers):
            if kind in NEVER_TRAINED:
                continue
            for name, shape in layers:
                if _matches(name, adapter.lora_targets("te", lc.targets)):
                    out += [lc.rank * shape[1], shape[0] * lc.rank]
    return out


def optimizer_bytes(optimizer: str, tensors: list[int]) -> int:
    """The optimizer's state over the trainable tensors, as its registration (trainer/train/optim.py) counts it."""
    state_bytes = optimizer_spec(optimizer).state_bytes
    return sum(state_bytes(n) for n in tensors)


# ------------------------------------------------------------------------------------------- device


# the devices whose memory is the system's, by device type (plan.json and the CLI keep these names)
SHARED_MEMORY = {"cpu": "CPU (system memory)", "mps": "Apple GPU (shared memory)"}


def device_memory(device: torch.device) -> tuple[str, int | None, int | None]:
    """(name, free bytes, total bytes) of a device; the CPU's available system memory (psutil)."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        return f"{torch.cuda.get_device_name(device)} ({device})", int(free), int(total)
    import psutil

    vm = psutil.virtual_memory()
    return SHARED_MEMORY["mps" if device.type == "mps" else "cpu"], int(vm.available), int(vm.total)


def verdict_for(total: int, free: int | None) -> str:
    if free is None:
        return "unknown"
    return "fits" if total <= TIGHT_SHARE * free else "tight" if total <= free else "spill"


# --------------------------------------------------------------------------------------------- plan


def largest_bucket(cfg: Config, buckets: list[dict] | None = None) -> tuple[int, int]:
    """(width, height) of the bucket with the most pixels (the step that peaks); the square resolution without
    a scanned dataset."""
    sizes = [(b["width"], b["height"]) for b in buckets or [] if b.get("image_repeats", 1)]
    r = cfg.dataset.resolution
    return max(sizes, key=lambda wh: wh[0] * wh[1]) if sizes else (r, r)


def estimate_memory(cfg: Config, buckets: list[dict] | None = None, device: torch.device | None = None,
                    free: int | None = -1, device_name: str | None = None, bf16: bool | None = None) -> MemoryPlan:
    """The estimated peak device memory of training ``cfg`` (its largest bucket), by part, and the verdict
    against ``device``'s free memory (asked of the device unless ``free`` is given; None: unknown). ``bf16``:
    whether the device has it (None: ask it)."""
    device = device or resolve_device(cfg.train.device)
    precision = decide_precision(cfg.train.precision, device, bf16=bf16)
    shapes = shapes_for(cfg.model)
    half = precision.autocast_dtype is not None
    wbytes = precision.weight_dtype.itemsize
    runtime = RUNTIME_BYTES.get(device.type, RUNTIME_BYTES["cpu"])
    text_weights = sum(n * _text_weight_bytes(kind, precision.weight_dtype) for kind, n in shapes.text_encoders)
    # the encoders leave for the CPU after encoding: out of the device's memory unless that memory is the system's
    offloaded = cfg.model.offload_text_encoders and device.type not in SHARED_MEMORY
    vae_bytes = 4 if device.type == "cpu" or (precision.precision == "fp16" and shapes.vae_force_upcast) else wbytes
    tensors = lora_tensors(cfg, shapes)
    lora = 4 * sum(tensors)
    width, height = largest_bucket(cfg, buckets)
    latent_pixels = (width // shapes.vae_scale) * (height // shapes.vae_scale)
    batch = cfg.train.batch_size

    adapter = model_family(shapes.family)
    key = ("half" if half else "fp32", cfg.train.gradient_checkpointing)
    regimes = [adapter.activations[key], adapter.small_latent_activations.get(key, (0.0, 0.0, 0.0))]
    scale = shapes.widths / adapter.reference_widths
    activations = max(0.0, *((per_step + batch * (per_sample + per_pixel * latent_pixels)) * scale * _rank_factor(cfg)
                             for per_step, per_sample, per_pixel in regimes))
    text_acts = 0.0
    if cfg.lora.train_text_encoder:
        text_acts = batch * sum(TEXT_ACTIVATIONS[(kind, "half" if half else "fp32")] for kind, _ in shapes.text_encoders)
    vae_extra = 0.0
    if not cfg.dataset.cache_latents:  # encoded before the UNet runs: only its excess over the step's peak counts
        v0, v1 = VAE_ENCODE
        vae_extra = max(0.0, batch * (v0 + v1 * width * height) * vae_bytes / 4 - activations - text_acts)
    low = denoiser_weights(cfg, shapes, wbytes, 2 if half else 4, latent_pixels, adapter.label,
                           device.type in SHARED_MEMORY)
    parts = {
        **low.parts,
        "text_encoder_weights": 0 if offloaded else text_weights,
        # after the latent cache is filled the VAE goes back to the CPU (Feeder.cache_latents); on a CPU it stays
        "vae_weights": shapes.vae * vae_bytes if (not cfg.dataset.cache_latents or device.type == "cpu") else 0,
        "lora_weights": lora,
        "lora_gradients": lora,
        "optimizer_state": optimizer_bytes(cfg.optim.optimizer, tensors),
        "ema": lora if cfg.ema.enabled else 0,
        "activations": activations,
        "text_encoder_activations": text_acts,
        "vae_encode": vae_extra,
        "runtime": runtime,
    }
    rounded = {k: round(v) for k, v in parts.items()}
    encode = None
    if offloaded:  # the encoders alone on the device, one caption (or sample batch) at a time
        rows = text_encode_rows(cfg)
        acts = rows * sum(TEXT_ENCODE[(kind, "half" if half else "fp32")] for kind, _ in shapes.text_encoders)
        encode = {"text_encoder_weights": round(text_weights), "text_encode": round(acts), "runtime": runtime}
    train_total, encode_total = sum(rounded.values()), sum(encode.values()) if encode else 0
    total, phase = max((train_total, "train"), (encode_total, "encode"))
    name, asked_free, device_total = device_memory(device) if free == -1 else (device_name or str(device), free, None)
    notes: list[Msg] = low.notes
    if precision.fallback:
        notes.append(precision.fallback)
    if shapes.widths != adapter.reference_widths:
        notes.append(msg("memory.note.scaled_activations"))
    warnings = low.warnings
    if precision.precision == "fp16" and adapter.bf16_native:
        warnings.append(msg("memory.warn.fp16_family", family=adapter.label))
    if key in adapter.provisional_activations:
        warnings.append(msg("memory.warn.provisional", family=adapter.label))
    note = adapter.distillation_note(shapes.denoiser_config, cfg.model)
    if note is not None:
        warnings.append(note)
    if cfg.model.offload_text_encoders and not offloaded:
        warnings.append(msg("memory.warn.offload_shared"))
    if cfg.train.min_snr_gamma > 0 and not adapter.min_snr:
        warnings.append(msg("memory.warn.min_snr", family=adapter.label, gamma=cfg.train.min_snr_gamma))
    return MemoryPlan(rounded, total, name, asked_free, verdict_for(total, asked_free), device_total,
                      (width, height), notes, warnings, encode, phase, low.info or None)


def text_encode_rows(cfg: Config) -> int:
    """Texts encoded in one pass before training: one caption at a time, or a sample batch's prompts with their
    negative halves (the sampling pipeline encodes both)."""
    from trainer.sampling import batch_size_for

    side = cfg.dataset.resolution
    return max(1, 2 * batch_size_for((side, side))) if cfg.sample.enabled else 1


def _text_weight_bytes(kind: str, weight_dtype: torch.dtype) -> int:
    # T5 overflows in fp16: SD3.5's adapter keeps its weights in fp32 when the run's are fp16 (prepare_weights)
    return 4 if kind == "t5" and weight_dtype == torch.float16 else weight_dtype.itemsize


def _rank_factor(cfg: Config) -> float:
    """The measured coefficients carry a rank-16 attention LoRA's own activations (its ``A·x``, a few % of the
    whole); other ranks and target sets change that little enough to leave out."""
    return 1.0
