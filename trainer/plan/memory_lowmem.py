"""The frozen denoiser's bytes on the device under ``model.base_quant`` and ``model.block_swap``
(:mod:`trainer.models.lowmem`), and how much slower each makes a step.

Counted from the base's configs built on the meta device (:class:`trainer.plan.memory.ModelShapes`): every Linear
weight stored as the mode stores it, int8 1 byte a weight and an fp32 scale per output row, NF4 half a byte, an
8-bit absmax per 64 weights and an fp32 one per 256 of those (bitsandbytes' double quantization) with its code
tables, fp8 1 byte and an fp32 scale per row; everything else (norms, embeddings, biases, convolutions) in the
run's weight dtype. Each use dequantizes one layer at a time into the compute dtype: the largest layer so is a
transient part. Block swap takes the last N blocks' frozen bytes off the device and adds one block in flight (one
swapped block is on the device at a time); their bytes wait in pinned CPU memory.

The slowdowns are estimates, marked provisional until a GPU measures them (``bench/gpu_check.sh``, part 7, ``bench/bench_lowmem.py``; the
measured factors then replace :data:`QUANT_SLOWDOWN`, :data:`PCIE_BYTES_PER_S` and :data:`GPU_FLOPS`):
block swap copies each swapped block to the device twice a step (forward, backward; gradient checkpointing's
recomputation finds it already there) on the compute stream, not overlapped with compute, at an assumed PCIe
bandwidth, against the step's compute, ``passes × 2 × Linear weights × picture tokens × batch`` floating-point
operations (a transformer of 2×2 patches, ``latent pixels / 4`` tokens; the text tokens are left out, so the
compute is under-counted and the slowdown over-stated) at an assumed throughput; passes are 3 (forward, and the
backward's two products), 4 with checkpointing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainer.message import Msg, msg
from trainer.models.lowmem import NF4_BLOCK, swap_error

QUANT_SLOWDOWN = {"none": 1.0, "int8": 1.30, "nf4": 1.25, "fp8": 1.10}
"""Provisional step-time factors of each storage: dequantizing every layer at each use (forward, backward, and the
recomputation with checkpointing); int8 also quantizes the activations (LLM.int8, outliers kept in fp16)."""
PCIE_BYTES_PER_S = 25e9  # PCIe 4.0 ×16 from pinned memory, in practice (assumed)
GPU_FLOPS = 40e12  # the dense bf16 throughput a 12–16 GB card sustains in a training step (assumed)
NF4_NESTED_BLOCK = 256  # bitsandbytes' second-level block over the 8-bit absmax values
NF4_TABLES = 64 + 1024 + 4  # per layer: NF4's 16-value code, the nested 256-value code, the offset (fp32 each)


@dataclass
class LowMemory:
    """The frozen denoiser's parts (by :data:`trainer.plan.memory.MemoryPlan.parts` key), what the person should
    know about them, and the figures ``plan --json`` carries (``low_memory``)."""

    parts: dict[str, float]
    notes: list[Msg] = field(default_factory=list)
    warnings: list[Msg] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def linear_bytes(mode: str, out_features: int, in_features: int, wbytes: int) -> float:
    """One Linear weight (its bias not included) stored the ``mode`` way."""
    n = out_features * in_features
    if mode in ("int8", "fp8"):
        return n + 4 * out_features
    if mode == "nf4":
        return n / 2 + n / NF4_BLOCK + 4 * n / (NF4_BLOCK * NF4_NESTED_BLOCK) + NF4_TABLES
    return n * wbytes


def _linears(shapes, prefix: str = "") -> list[tuple[int, int]]:
    return [(s[0], s[1]) for name, kind, s in shapes.unet_layers
            if kind == "Linear" and (not prefix or name.startswith(prefix + "."))]


def _stored(shapes, mode: str, wbytes: int, params: int, prefix: str = "") -> float:
    """Bytes of ``params`` parameters (a block's, or all) with their Linear weights stored the ``mode`` way."""
    layers = _linears(shapes, prefix)
    weights = sum(o * i for o, i in layers)
    return sum(linear_bytes(mode, o, i, wbytes) for o, i in layers) + (params - weights) * wbytes


def denoiser_weights(cfg, shapes, wbytes: int, compute_bytes: int, latent_pixels: int, family_label: str,
                     shared_memory: bool) -> LowMemory:
    """The frozen denoiser's parts on ``device`` for ``cfg.model.base_quant`` and ``cfg.model.block_swap``."""
    mode, n = cfg.model.base_quant, cfg.model.block_swap
    if error := swap_error(n, None if shapes.blocks is None else len(shapes.blocks), family_label):
        raise error
    if mode == "none" and not n:
        return LowMemory({"unet_weights": shapes.unet * wbytes})
    layers = _linears(shapes)
    weights = sum(o * i for o, i in layers)
    parts: dict[str, float] = {}
    out = LowMemory(parts)
    if mode == "none":
        parts["unet_weights"] = shapes.unet * wbytes
    else:
        parts["unet_other_weights"] = (shapes.unet - weights) * wbytes
        parts[f"unet_linear_{mode}"] = sum(linear_bytes(mode, o, i, wbytes) for o, i in layers)
        parts["quant_dequant"] = max(o * i for o, i in layers) * compute_bytes
        factor = QUANT_SLOWDOWN[mode]
        out.notes.append(msg(f"memory.lowmem.quant.{mode}", pct=round(100 * (factor - 1))))
        out.info["base_quant"] = {"mode": mode, "slowdown": factor, "provisional": True}
    if n:
        assert shapes.blocks is not None
        swapped = [_stored(shapes, mode, wbytes, params, name) for name, params in shapes.blocks[-n:]]
        parked, in_flight = sum(swapped), max(swapped)
        if shared_memory:  # the CPU's memory is the device's: nothing leaves it
            out.warnings.append(msg("memory.warn.swap_shared"))
        else:
            parts["block_swap_parked"] = -parked
            parts["block_swap_in_flight"] = in_flight
        passes = 4 if cfg.train.gradient_checkpointing else 3
        compute = passes * 2 * weights * (latent_pixels / 4) * cfg.train.batch_size / GPU_FLOPS
        copy = 2 * parked / PCIE_BYTES_PER_S
        factor = 1 + copy / compute
        out.notes.append(msg("memory.lowmem.swap", n=n, blocks=len(shapes.blocks), pinned=_gib(parked),
                             moved=_gib(2 * parked), bandwidth=round(PCIE_BYTES_PER_S / 1e9),
                             copy_ms=round(1000 * copy), compute_ms=round(1000 * compute),
                             tflops=round(GPU_FLOPS / 1e12), pct=round(100 * (factor - 1))))
        out.info["block_swap"] = {"blocks": n, "of": len(shapes.blocks), "pinned_host_bytes": round(parked),
                                  "in_flight_blocks": 1, "bytes_copied_per_step": round(2 * parked),
                                  "copy_s": copy, "compute_s": compute, "slowdown": factor, "provisional": True}
    return out


def slowdown(plan) -> float:
    """The step-time factor ``plan``'s low-memory choices are estimated to cost (1.0: none)."""
    info = plan.low_memory or {}
    return float(info.get("base_quant", {}).get("slowdown", 1.0) * info.get("block_swap", {}).get("slowdown", 1.0))


def _gib(n: float) -> str:
    from trainer.plan.memory import gib

    return gib(n)
