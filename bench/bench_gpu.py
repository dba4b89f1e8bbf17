"""Real-size SD1.5 on a GPU: it/s and peak VRAM for ours and the reference recipe, in one run.

Random weights from the shipped SD1.5 config (no download), 512 px, bf16, batch 1 and 4, gradient
checkpointing off and on, SDPA attention. "ours" is our training step (cached latents and text embeddings,
fp32 LoRA params and AdamW state, the guard's one sync); "reference" re-implements the training step of
diffusers' ``train_text_to_image_lora.py`` (VAE and text encoder every step, clipping a list of params).

    python bench/bench_gpu.py            # on a CUDA GPU; finishes in a few minutes on one H200
    python bench/bench_gpu.py --smoke    # a few steps of a tiny config on the CPU (what the tests run)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def build_models(smoke: bool, device, dtype):
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from trainer.models import MODEL_CONFIG_DIR
    from trainer.tiny_models import build_tiny_pipeline

    if smoke:
        pipe = build_tiny_pipeline("sd15")
        unet, vae, te = pipe.unet, pipe.vae, pipe.text_encoder
        sched = DDPMScheduler.from_config(pipe.scheduler.config)
        res = 64
    else:
        cfg_dir = MODEL_CONFIG_DIR / "sd15"
        unet = UNet2DConditionModel.from_config(UNet2DConditionModel.load_config(cfg_dir / "unet"))
        vae = AutoencoderKL.from_config(AutoencoderKL.load_config(cfg_dir / "vae"))
        te = CLIPTextModel(CLIPTextConfig.from_pretrained(cfg_dir / "text_encoder"))
        sched = DDPMScheduler.from_config(DDPMScheduler.load_config(cfg_dir / "scheduler"))
        res = 512
    for m in (unet, vae, te):
        m.requires_grad_(False)
        m.to(device, dtype=dtype)
    return unet, vae, te, sched, res


def attach(unet, rank: int = 16):
    from peft import LoraConfig, inject_adapter_in_model

    inject_adapter_in_model(LoraConfig(r=rank, lora_alpha=rank, init_lora_weights="gaussian",
                                       target_modules=["to_q", "to_k", "to_v", "to_out.0"]), unet)
    params = [p for p in unet.parameters() if p.requires_grad]
    for p in params:
        p.data = p.data.float()
    return params


def make_step(kind: str, unet, vae, te, sched, res: int, batch: int, device, dtype, params):
    from trainer.numerics import grad_norms, read_health, weight_norm_flag

    fused = device.type == "cuda"
    opt = torch.optim.AdamW(params, lr=1e-4, fused=fused, foreach=None if fused else True)
    pixels = torch.randn(batch, 3, res, res, device=device, dtype=dtype)
    ids = torch.randint(0, te.config.vocab_size, (batch, 77), device=device)
    with torch.no_grad():
        cached_latents = (vae.encode(pixels).latent_dist.mean * vae.config.scaling_factor).float()
        cached_hidden = te(ids)[0]
    autocast = torch.autocast(device.type, dtype=dtype) if dtype != torch.float32 else torch.autocast(
        device.type, enabled=False)

    def step():
        if kind == "reference":
            with torch.no_grad():
                latents = vae.encode(pixels).latent_dist.sample() * vae.config.scaling_factor
                hidden = te(ids)[0]
        else:
            latents, hidden = cached_latents, cached_hidden
        noise = torch.randn_like(latents)
        t = torch.randint(0, sched.config.num_train_timesteps, (batch,), device=device)
        noisy = sched.add_noise(latents, noise, t)
        with autocast:
            pred = unet(noisy.to(dtype), t, hidden).sample
        loss = F.mse_loss(pred.float(), noise.float())
        loss.backward()
        if kind == "reference":
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            loss.item()
        else:
            gn, clipped = grad_norms(params, 1.0)
            wn, ok = weight_norm_flag(params)
            h = read_health(loss.detach(), 1, gn, clipped, None, ok, None, wn, None)
            if h.grad_finite and h.loss_finite:
                opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def measure(step, steps: int, device) -> tuple[float, float | None]:
    for _ in range(2):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    return 1.0 / statistics.median(times), peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="tiny config on the CPU, a few steps")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    steps = args.steps or (2 if args.smoke else 12)
    batches = [1] if args.smoke else [1, 4]
    results = []
    unet, vae, te, sched, res = build_models(args.smoke, device, dtype)
    params = attach(unet)
    unet.train()
    for gc in (False, True):
        if gc:
            unet.enable_gradient_checkpointing()
        else:
            unet.disable_gradient_checkpointing()
        for batch in batches:
            row = {"batch": batch, "grad_ckpt": gc}
            for kind in ("reference", "ours", "reference", "ours"):  # alternate, keep the better of two
                its, peak = measure(make_step(kind, unet, vae, te, sched, res, batch, device, dtype, params), steps,
                                    device)
                prev = row.get(kind)
                if prev is None or its > prev[0]:
                    row[kind] = (its, peak)
            results.append(row)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu (smoke)"
    if args.json:
        print(json.dumps({"device": name, "results": results}))
        return
    print(f"device: {name}; SD1.5 UNet {'tiny' if args.smoke else 'real-size'} at {res} px, {dtype}, SDPA")
    print(f"{'batch':>5} {'ckpt':>5} {'ref it/s':>9} {'ours it/s':>10} {'speed-up':>9} {'ref VRAM':>9} {'ours VRAM':>10}")
    def fmt(v: float | None) -> str:
        return f"{v:.2f}G" if v is not None else "-"

    for r in results:
        (ri, rp), (oi, op) = r["reference"], r["ours"]
        print(f"{r['batch']:>5} {r['grad_ckpt']!s:>5} {ri:>9.2f} {oi:>10.2f} {oi / ri:>8.2f}x {fmt(rp):>9} {fmt(op):>10}")


if __name__ == "__main__":
    main()
