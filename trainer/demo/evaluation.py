"""Drawing from a demo pipeline and counting what comes out: the base model's prompt adherence, and the pictures
the LoRA checks measure. Used by ``scripts/train_demo_base.py``, ``scripts/demo_base_report.py``,
``scripts/demo_lora_check.py`` and the demo learning test."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from PIL import Image

from trainer.demo.base_model import IMAGE_SIZE
from trainer.demo.measures import adherence_scores, detect_background, detect_colour, detect_shape, likeness
from trainer.demo.world import TRIGGER, caption, sample_scene

EVAL_STEPS = 20  # DDIM steps and guidance the base is measured with (the demo preset samples alike)
EVAL_GUIDANCE = 5.0


@torch.no_grad()
def draw(pipe, prompts: list[str], seeds: list[int], steps: int = EVAL_STEPS, guidance: float = EVAL_GUIDANCE,
         batch: int = 16) -> list[Image.Image]:
    """One picture per (prompt, seed), in batches; each picture depends only on its own prompt and seed."""
    images: list[Image.Image] = []
    pipe.set_progress_bar_config(disable=True)
    for b in range(0, len(prompts), batch):
        gens = [torch.Generator().manual_seed(sd) for sd in seeds[b : b + batch]]
        images += pipe(prompts[b : b + batch], num_inference_steps=steps, guidance_scale=guidance,
                       generator=gens, height=IMAGE_SIZE, width=IMAGE_SIZE).images
    return images


def adherence_figures(pipe, n_seeds: int = 32, seed: int = 0, steps: int = EVAL_STEPS,
                      guidance: float = EVAL_GUIDANCE) -> dict[str, Any]:
    """Draw ``n_seeds`` random world prompts (one seed each) and count how often each attribute comes out.

    Colour and shape are read with ``detect_colour``/``detect_shape``, the background with
    ``detect_background``; position and size count when their adherence score is over 0.5. Also the mean
    likeness of ``"zxc"`` pictures, which must stay near 0: the base model has never seen the character.
    """
    rng = np.random.default_rng(100_000 + seed)
    scenes = [sample_scene(rng) for _ in range(n_seeds)]
    seeds = [seed * 10_000 + i for i in range(n_seeds)]
    images = draw(pipe, [caption(sc) for sc in scenes], seeds, steps, guidance)
    rows: list[dict[str, Any]] = []
    for sc, img in zip(scenes, images):
        scores = adherence_scores(img, {"position": sc.position, "size": sc.size, "shape": sc.shape})
        rows.append({"prompt": caption(sc), "colour": detect_colour(img), "shape": detect_shape(img),
                     "background": detect_background(img), "position_ok": scores["position"] > 0.5,
                     "size_ok": scores["size"] > 0.5})
    hits = {
        "colour": [r["colour"] == sc.colour for r, sc in zip(rows, scenes)],
        "shape": [r["shape"] == sc.shape for r, sc in zip(rows, scenes)],
        "background": [r["background"] == sc.background for r, sc in zip(rows, scenes)],
        "position": [r["position_ok"] for r in rows],
        "size": [r["size_ok"] for r in rows],
    }
    trigger = draw(pipe, [TRIGGER] * 8, seeds[:8], steps, guidance)
    return {"n": n_seeds, "steps": steps, "guidance": guidance,
            **{k: float(np.mean(v)) for k, v in hits.items()},
            "trigger_likeness": float(np.mean([likeness(i) for i in trigger])), "rows": rows, "images": images}


def format_figures(f: dict[str, Any]) -> str:
    parts = ", ".join(f"{k} {100 * f[k]:.0f}%" for k in ("colour", "shape", "background", "position", "size"))
    return (f"over {f['n']} prompts/seeds ({f['steps']} DDIM steps, guidance {f['guidance']:g}): {parts}; "
            f"likeness of '{TRIGGER}' pictures {f['trigger_likeness']:.2f}")
