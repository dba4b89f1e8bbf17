"""The demo really learns: a short LoRA run on the committed demo base draws the character, the base does not.

A real check of the whole path a newcomer's first run takes (demo dataset and prior images → the run the app's Start
trains on a fresh workspace, ``model.base = "demo"`` → kohya LoRA file and trigger embedding → loaded onto the base →
pictures measured). The run is the default demo run the browser's verdict test reads too (``tests/default_run.py``),
trained once for both.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer.config.schema import ModelConfig
from trainer.demo import evaluation as ev
from trainer.demo.measures import likeness
from trainer.demo.world import TRIGGER
from trainer.models.base import DEMO_BASE_DIR, load_pipeline
from trainer.models.embedding import embedding_beside, load_embedding
from trainer.run.contents import load_run_config
from trainer.run.rundir import RunPaths

pytestmark = pytest.mark.slow

PROMPTS = [TRIGGER, f"{TRIGGER}, wearing a red hat, on grass, center, large"]
SEEDS = [0, 1, 2, 3]


def _likeness(pipe) -> float:
    prompts = [p for p in PROMPTS for _ in SEEDS]
    seeds = [s for _ in PROMPTS for s in SEEDS]
    return float(np.mean([likeness(i) for i in ev.draw(pipe, prompts, seeds, steps=15, guidance=5.0)]))


def test_demo_base_loads_as_the_app_loads_it():
    assert (DEMO_BASE_DIR / "model_index.json").is_file(), "demo/base is missing: run scripts/train_demo_base.py"
    on_disk = sum(p.stat().st_size for p in DEMO_BASE_DIR.rglob("*") if p.is_file())
    assert on_disk <= 20_000_000
    pipe, info = load_pipeline(ModelConfig(base="demo"))
    assert info.kind == "demo" and info.family == "sd15" and pipe.safety_checker is None
    assert all(p.dtype == torch.float32 for m in (pipe.unet, pipe.vae, pipe.text_encoder) for p in m.parameters())


def test_the_default_run_draws_the_character(default_demo_run):
    """The default demo run's final LoRA and trigger embedding, on the base as a user's pipeline loads them."""
    run_dir = default_demo_run[1]
    cfg = load_run_config(run_dir)
    final = RunPaths(run_dir).final / "lora.safetensors"
    assert final.is_file(), f"the default run saved no {final}"

    pipe, _ = load_pipeline(cfg.model)
    pipe.set_progress_bar_config(disable=True)
    before = _likeness(pipe)
    pipe.load_lora_weights(str(final.parent), weight_name=final.name)
    embedding = embedding_beside(final)
    if cfg.lora.trigger_embedding:
        assert embedding is not None, "the preset trains the trigger embedding but none was saved"
        load_embedding(pipe, embedding, TRIGGER)
    after = _likeness(pipe)
    assert before < 0.05, f"the base model already draws the character (likeness {before:.2f})"
    assert after >= 0.7, f"likeness {before:.2f} → {after:.2f} after {cfg.train.max_steps} steps (0.96 when measured)"
