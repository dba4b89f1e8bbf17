"""The demo world's picture measures as a picture judge (:mod:`trainer.doctor.judges`): on the demo character's
own run (its dataset folder, with the demo manifest, and its trigger) the pictures can be read for what they
show — likeness, adherence to the review prompts, what a no-trigger picture shows against the base model's.

Registered when :mod:`trainer.demo` is imported. ``demo_measure_steps`` and ``demo_checkpoint_labels`` read any
run of the demo world's pictures the same way, folder or not (``scripts/doctor_calibration.py`` measures the
truth of runs the app judges as a user's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainer.config.schema import Config
from trainer.demo.measures import adherence, likeness, world_leakage_scores
from trainer.demo.world import TRIGGER, demo_prompt_specs
from trainer.doctor.judges import PictureJudge, SamplePicture, register_judge
from trainer.doctor.pictures import ADHERENCE_SLACK, LEAKAGE_LIMIT, judge_rows
from trainer.doctor.verdict import LIKENESS_SHOWS  # the lines the verdict reads a judge's numbers against

BASE_LIKENESS_LIMIT = 0.3  # step 0 looking this much like the character: the likeness measure is void


def trains_the_demo_character(config: Config) -> bool:
    """The demo's dataset folder (its manifest) and trigger."""
    return (Path(config.dataset.path) / "demo_manifest.json").is_file() and config.dataset.trigger == TRIGGER


def demo_reader(config: Config | None, base_pictures: list[SamplePicture],
                force: bool = False) -> Callable[[SamplePicture], dict[str, float]] | None:
    """The demo's reader for this run, or None when it does not apply: another dataset (unless ``force``), or a
    base model that already draws the character (likeness then means nothing: pure noise from an untrained tiny
    model is full of magenta and yellow)."""
    if not force and (config is None or not trains_the_demo_character(config)):
        return None
    base_like = [likeness(p.base_image) for p in base_pictures if p.record.get("kind") != "no_trigger"]
    if not base_like or float(np.mean(base_like)) >= BASE_LIKENESS_LIMIT:
        return None
    expected = {p.prompt: p.expected for p in demo_prompt_specs()}

    def read(p: SamplePicture) -> dict[str, float]:
        if p.record.get("kind") == "no_trigger":
            return {"leakage": world_leakage_scores(p.image, p.base_image)["leakage"]}
        out = {"likeness": likeness(p.image)}
        if p.record.get("prompt") in expected:
            out["adherence"] = adherence(p.image, expected[p.record["prompt"]])
        return out

    return read


register_judge(PictureJudge("demo", demo_reader))


def demo_measure_steps(run_dir: str | Path, force: bool = False) -> list[dict[str, Any]]:
    """Per sampled step after 0, the demo's likeness, adherence and leakage (means over the samples)."""
    return judge_rows(Path(run_dir), lambda config, base: demo_reader(config, base, force=force))


def demo_label(like: float | None, adh: float | None, leak: float | None, best_adh: float | None) -> str | None:
    """The verdict the demo's measures give one save: under when the character does not show, over when
    no-trigger pictures leak or adherence fell from an earlier peak once the character shows, else fit."""
    if like is None:
        return None
    if leak is not None and leak > LEAKAGE_LIMIT:
        return "over"
    if like < LIKENESS_SHOWS:
        return "under"
    if adh is not None and best_adh is not None and adh < best_adh - ADHERENCE_SLACK:
        return "over"
    return "fit"


def demo_checkpoint_labels(run_dir: str | Path, force: bool = False) -> dict[int, str]:
    """step → the demo measures' verdict, for every sampled step after 0."""
    return demo_labels(demo_measure_steps(run_dir, force=force))


def demo_labels(rows: list[dict[str, Any]]) -> dict[int, str]:
    """step → the demo measures' verdict, from rows of ``step``, ``likeness``, ``adherence``, ``leakage`` in step
    order (adherence is judged against its best so far)."""
    out, best = {}, None
    for r in rows:
        label = demo_label(r.get("likeness"), r.get("adherence"), r.get("leakage"), best)
        if label is not None:
            out[r["step"]] = label
        if r.get("adherence") is not None and (r.get("likeness") or 0) >= LIKENESS_SHOWS:
            best = r["adherence"] if best is None else max(best, r["adherence"])
    return out
