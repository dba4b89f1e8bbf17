#!/usr/bin/env python
"""Train the demo base model from scratch and write it to ``demo/base/`` (a diffusers folder, fp16 weights).

    python scripts/train_demo_base.py                  # the committed model: seed 0, 1 CPU thread
    python scripts/train_demo_base.py --resume         # carry on from the last checkpoint in --work

Three stages (see ``trainer/demo/base_training.py``): the VAE, the world's latents, then the UNet and text
encoder together. Checkpoints go to ``--work`` (a temp folder) so a crash loses at most a few minutes.
At the end the saved folder is loaded back as the app loads it and drawn from: how often the prompted
colour and shape come out, and ``demo/base/training_report.json`` records that with the settings, sizes
and the time each stage took.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from trainer.config.schema import ModelConfig
from trainer.demo import base_model as bm
from trainer.demo import base_training as bt
from trainer.demo import evaluation as ev
from trainer.io import atomic_write_json
from trainer.models.base import DEMO_BASE_DIR, load_pipeline


def _save_atomic(obj, path: Path) -> None:
    tmp = path.with_suffix(".part")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEMO_BASE_DIR), help="where the diffusers folder goes")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "lora-doctor-demo-base"),
                    help="checkpoints and cached latents")
    ap.add_argument("--threads", type=int, default=bt.BaseSettings.threads)
    ap.add_argument("--steps", type=int, default=bt.BaseSettings.steps, help="UNet/text-encoder steps")
    ap.add_argument("--batch", type=int, default=bt.BaseSettings.batch, help="UNet/text-encoder batch")
    ap.add_argument("--lr", type=float, default=bt.BaseSettings.lr, help="UNet/text-encoder peak lr")
    ap.add_argument("--vae-steps", type=int, default=bt.BaseSettings.vae_steps)
    ap.add_argument("--seed", type=int, default=bt.BaseSettings.seed)
    ap.add_argument("--caption-canonical-share", type=float, default=bt.BaseSettings.caption_canonical_share,
                    help="share of world captions in the canonical order; the rest come with their tags in a "
                         "random order (see docs/demo.md, Demo status)")
    ap.add_argument("--resume", action="store_true", help="reuse the VAE, latents and last checkpoint in --work")
    ap.add_argument("--keep-checkpoints", action="store_true",
                    help="also keep diffusion-<step>.pt for every checkpoint (about 100 MB each)")
    ap.add_argument("--eval-seeds", type=int, default=32, help="prompts drawn to measure the result")
    args = ap.parse_args(argv)

    s = bt.BaseSettings(seed=args.seed, threads=args.threads, steps=args.steps, batch=args.batch, lr=args.lr,
                        vae_steps=args.vae_steps, caption_canonical_share=args.caption_canonical_share)
    torch.set_num_threads(s.threads)
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    refusal = bt.stamp_settings(work, s, args.resume)
    if refusal:
        raise SystemExit(refusal)
    timings_path = work / "timings.json"
    timings: dict[str, float] = json.loads(timings_path.read_text()) if args.resume and timings_path.is_file() else {}

    def log(msg: str) -> None:
        print(msg, flush=True)

    def add_time(stage: str, seconds: float) -> None:
        timings[stage] = round(timings.get(stage, 0.0) + seconds, 1)
        atomic_write_json(timings_path, timings)

    # stage 1: the VAE
    torch.manual_seed(s.seed)
    vae = bm.build_vae()
    vae_path = work / "vae.pt"
    if args.resume and vae_path.is_file():
        vae.load_state_dict(torch.load(vae_path))
        log(f"VAE loaded from {vae_path}")
    else:
        t0 = time.perf_counter()
        bt.train_vae(vae, s, log)
        add_time("vae", time.perf_counter() - t0)
        _save_atomic(vae.state_dict(), vae_path)
    vae.eval()

    # stage 2: the world's latents
    latents_path = work / "world_latents.pt"
    if args.resume and latents_path.is_file():
        cached = torch.load(latents_path)
        latents, captions = cached["latents"], cached["captions"]
    else:
        t0 = time.perf_counter()
        latents, captions = bt.encode_world(vae, s.world_images, s.seed + 10, s=s)
        add_time("encode_world", time.perf_counter() - t0)
        _save_atomic({"latents": latents, "captions": captions}, latents_path)
    factor = bt.set_scaling_factor(vae, latents)
    log(f"{len(captions)} world scenes encoded; scaling_factor {factor:.4f}")

    # stage 3: UNet and text encoder together
    torch.manual_seed(s.seed + 20)
    text_encoder, unet = bm.build_text_encoder(), bm.build_unet()
    ckpt_path = work / "diffusion.pt"
    state = torch.load(ckpt_path, weights_only=False) if args.resume and ckpt_path.is_file() else None
    if state is not None:
        if state["step"] > s.steps:
            raise SystemExit(f"{ckpt_path} is at step {state['step']}, past --steps {s.steps}; copy "
                             f"diffusion-{s.steps:06d}.pt over it (--keep-checkpoints keeps them) to stop there")
        log(f"resuming at step {state['step']}")
        timings["diffusion"] = state.get("seconds", timings.get("diffusion", 0.0))
    # The checkpoint carries the stage's time so far: resuming from any checkpoint reports true totals.
    done_before, t_start = (state.get("seconds", 0.0) if state else 0.0), time.perf_counter()

    def checkpoint(step: int, st: dict) -> None:
        st["seconds"] = round(done_before + time.perf_counter() - t_start, 1)
        _save_atomic(st, ckpt_path)
        if args.keep_checkpoints:
            _save_atomic(st, work / f"diffusion-{step:06d}.pt")
        timings["diffusion"] = st["seconds"]
        atomic_write_json(timings_path, timings)

    from trainer.models.tokenizer import clip_tokenizer

    bt.train_diffusion(unet, text_encoder, clip_tokenizer(), latents * factor, captions, s, log, checkpoint, state)

    # save, load back as the app does, measure
    pipe = bm.assemble_pipeline(vae, text_encoder, unet)
    n_bytes = bm.save_pipeline_fp16(pipe, out)
    log(f"saved {out} ({n_bytes / 1e6:.1f} MB)")
    t0 = time.perf_counter()
    loaded, _ = load_pipeline(ModelConfig(base=str(out)))
    figures = ev.adherence_figures(loaded, n_seeds=args.eval_seeds)
    add_time("evaluation", time.perf_counter() - t0)
    training_seconds = sum(v for k, v in timings.items() if k != "evaluation")
    report = {
        "what": "the demo base model, trained from scratch on the demo world by scripts/train_demo_base.py",
        "settings": s.to_json(),
        "architecture": {
            "image": f"{bm.IMAGE_SIZE}x{bm.IMAGE_SIZE}x3",
            "latent": f"{bm.LATENT_SIZE}x{bm.LATENT_SIZE}x{bm.LATENT_CHANNELS}",
            "params": {"vae": bm.n_params(vae), "text_encoder": bm.n_params(text_encoder), "unet": bm.n_params(unet)},
            "unet_blocks": list(unet.config.down_block_types), "unet_channels": list(unet.config.block_out_channels),
            "text_hidden": text_encoder.config.hidden_size, "text_layers": text_encoder.config.num_hidden_layers,
            "vae_channels": list(vae.config.block_out_channels), "scaling_factor": factor,
        },
        "bytes_on_disk": n_bytes,
        "seconds": {**timings, "training_total": round(training_seconds, 1)},
        "machine": {"torch": torch.__version__, "threads": s.threads, "cpu": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count()},
        "adherence": {k: v for k, v in figures.items() if k not in ("rows", "images")},
    }
    atomic_write_json(out / "training_report.json", report)
    log(f"training took {training_seconds / 60:.1f} min on {s.threads} thread(s)")
    log(ev.format_figures(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
