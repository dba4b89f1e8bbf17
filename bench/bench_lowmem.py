"""What ``model.base_quant`` and ``model.block_swap`` cost on a GPU: the step time and memory of SD3.5 Large's blocks
at full width, quantized each way and with some blocks swapped, against the memory plan's provisional factors.

SD3.5 Large's shipped transformer config with fewer joint blocks (random weights, no download), placed as a run
places it (:func:`trainer.models.lowmem.place_denoiser`), a rank-16 attention LoRA attached, 1024 px (4,096
picture tokens and 333 text tokens), batch 1, bf16, gradient checkpointing on; one warm-up step, then the mean of
``--steps``. Each cell prints a JSON line; the last line is what replaces the plan's provisional constants
(``trainer/plan/memory_lowmem.py``): each storage's step-time factor against bf16, the PCIe bandwidth block swap
really got, and the throughput the step reached (an H200 is far faster than a 12–16 GB card: keep GPU_FLOPS for
those, or measure on one).

    python bench/bench_lowmem.py                # on a CUDA GPU: about 3 minutes on one H200
    python bench/bench_lowmem.py --smoke        # the same path on the CPU with the tiny SD3.5 (what the tests run)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

TEXT_TOKENS = 333  # CLIP-L and OpenCLIP-G's 77 and T5's 256


def build(blocks: int, smoke: bool):
    from diffusers import SD3Transformer2DModel

    from trainer.models.family import family

    if smoke:
        return family("sd3").build_tiny(0, "flow").transformer
    config = dict(SD3Transformer2DModel.load_config(str(REPO / "trainer/models/model_configs/sd3-large/transformer")))
    config["num_layers"] = blocks
    with torch.device("cpu"):
        return SD3Transformer2DModel.from_config(config).to(torch.bfloat16)


def cell(mode: str, swap: int, args, device: torch.device) -> dict:
    from types import SimpleNamespace

    from peft import LoraConfig, inject_adapter_in_model

    from trainer.models.family import family
    from trainer.models.lowmem import place_denoiser
    from trainer.plan.memory_lowmem import linear_bytes

    dtype = torch.float32 if args.smoke else torch.bfloat16
    torch.manual_seed(0)
    model = build(args.blocks, args.smoke)
    adapter = family("sd3")
    linears = [(m.out_features, m.in_features) for m in model.modules() if type(m) is torch.nn.Linear]
    planned = sum(linear_bytes(mode, o, i, dtype.itemsize) for o, i in linears)
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if device.type == "cuda" else 0
    blocks = adapter.denoiser_blocks(model)
    swapper = place_denoiser(model, blocks, SimpleNamespace(base_quant=mode, block_swap=swap), device, dtype)
    inject_adapter_in_model(LoraConfig(r=16, lora_alpha=16, target_modules=adapter.denoiser_targets["attn"],
                                       init_lora_weights="gaussian"), model)
    for p in model.parameters():
        if p.requires_grad:
            p.data = p.data.float()
    if swapper is not None:
        swapper.settle(model)
    placed = (torch.cuda.memory_allocated() if device.type == "cuda" else 0) - base
    model.enable_gradient_checkpointing()
    model.train()
    side = 16 if args.smoke else 128  # latent pixels a side: 1024 px / 8
    width = model.config.joint_attention_dim
    x = torch.randn(1, model.config.in_channels, side, side, device=device)
    text = torch.randn(1, 12 if args.smoke else TEXT_TOKENS, width, device=device)
    pooled = torch.randn(1, model.config.pooled_projection_dim, device=device)
    t = torch.tensor([500.0], device=device)

    def step() -> None:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=not args.smoke):
            out = adapter.predict(model, x, t, text, pooled, [(8 * side, 8 * side)])
        out.float().pow(2).mean().backward()

    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    moved0 = swapper.bytes_moved if swapper else 0
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / args.steps
    weights = sum(o * i for o, i in linears)
    return {"mode": mode, "block_swap": swap, "blocks": len(blocks), "step_s": seconds,
            "placed_bytes": placed, "planned_linear_bytes": round(planned),
            "peak_bytes": torch.cuda.max_memory_allocated() - base if device.type == "cuda" else None,
            "copied_bytes_per_step": ((swapper.bytes_moved - moved0) / args.steps) if swapper else 0,
            "linear_weights": weights, "tokens": side * side // 4}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=4, help="joint blocks of SD3.5 Large to build (the real one has 38)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--smoke", action="store_true", help="the tiny SD3.5 on the CPU: the same path, in seconds")
    args = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    cells = [cell(mode, 0, args, device) for mode in ("none", "int8", "nf4", "fp8")]
    cells.append(cell("none", args.blocks // 2, args, device))
    for c in cells:
        print(json.dumps(c), flush=True)
    plain = cells[0]
    swapped = cells[-1]
    extra = swapped["step_s"] - plain["step_s"]
    passes = 4  # gradient checkpointing: forward, recomputation, the backward's two products
    print(json.dumps({"measured": {
        "quant_slowdown": {c["mode"]: c["step_s"] / plain["step_s"] for c in cells[1:4]},
        "block_swap_slowdown": swapped["step_s"] / plain["step_s"],
        "pcie_bytes_per_s": swapped["copied_bytes_per_step"] / extra if extra > 0 else None,
        "step_flops_per_s": passes * 2 * plain["linear_weights"] * plain["tokens"] / plain["step_s"],
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
