"""Review a run from its folder: the checkpoint × prompt grid, leakage per checkpoint, a recommended
checkpoint.

Everything here reads pictures only (numpy, no torch); the strength sweep, which draws, is ``trainer.review.strength``. The seeds' rule for picking:
the best checkpoint sits between "fits" and "starting to overfit", and the last save is rarely it. With the
demo character the pictures can be measured (likeness, adherence); for any run the no-trigger sample can be
compared with the base model's (leakage) and the trigger samples with step 0 (burn).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from trainer.config.schema import Config, from_dict, read_toml
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.train.rundir import RunPaths, checkpoint_matches_marker

LEAKAGE_LIMIT = 0.5  # the no-trigger sample has drifted this far from the base model's: the LoRA leaks
BURN_LIMIT = 0.5  # trigger samples this burnt against step 0: colours deepen, lines roughen
ADHERENCE_SLACK = 0.15  # adherence this far under its best counts as "the prompt starts to be ignored"
BASE_LIKENESS_LIMIT = 0.3  # step 0 looking this much like the character: the likeness measure is void
MEASURE_SIDE = 128  # pictures are measured at most this big: the measures need shapes and colours, not detail

Progress = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------- reading


def load_run_config(run_dir: str | Path) -> Config:
    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(f"{run_dir} is not a run folder (no config.toml)")
    return from_dict(read_toml(paths.config), origin=str(paths.config))


def sample_manifests(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``samples/step-*/manifest.json``, by step, each with its folder as ``dir``."""
    out = []
    for m in sorted(RunPaths(Path(run_dir)).samples.glob("step-*/manifest.json")):
        try:
            data = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # a manifest being written right now; the next look sees it
        data["dir"] = str(m.parent)
        out.append(data)
    return sorted(out, key=lambda d: d["step"])


def sample_key(sample: dict[str, Any]) -> tuple[int, Any]:
    """A sample's prompt and seed: what lines it up with the same picture at another step."""
    return sample["index"], sample.get("seed")


def _column(sample: dict[str, Any], kinds_seen: dict[str, int]) -> str:
    """The grid column of a sample: its kind, or kind#index where two prompts share a kind."""
    return sample["kind"] if kinds_seen.get(sample["kind"], 0) <= 1 else f"{sample['kind']}#{sample['index']}"


def review_grid(run_dir: str | Path, weights: str = "live") -> dict[str, Any]:
    """Sample pictures as a grid: ``steps`` (rows), ``kinds`` (columns, the prompt kinds in prompt order),
    ``cells`` {(step, kind): the first seed's file}, ``files`` {(step, kind): every seed's file, in seed order}, and
    ``prompts`` {kind: prompt text}."""
    manifests = sample_manifests(run_dir)
    steps: list[int] = []
    kinds: list[str] = []
    cells: dict[tuple[int, str], str] = {}
    files: dict[tuple[int, str], list[str]] = {}
    prompts: dict[str, str] = {}
    for m in manifests:
        chosen = [s for s in m["samples"] if s.get("weights", "live") == weights]
        per_kind: dict[str, int] = {}
        for s in {s["index"]: s for s in chosen}.values():  # prompts, not pictures: one per seed
            per_kind[s["kind"]] = per_kind.get(s["kind"], 0) + 1
        for s in sorted(chosen, key=lambda s: (s["index"], s.get("seed") or 0)):
            col = _column(s, per_kind)
            if col not in kinds:
                kinds.append(col)
            prompts.setdefault(col, s["prompt"])
            cells.setdefault((m["step"], col), str(Path(m["dir"]) / s["file"]))
            files.setdefault((m["step"], col), []).append(str(Path(m["dir"]) / s["file"]))
        if chosen:
            steps.append(m["step"])
    return {"steps": steps, "kinds": kinds, "cells": cells, "files": files, "prompts": prompts}


def checkpoint_files(run_dir: str | Path) -> list[dict[str, Any]]:
    """The LoRA files a user can pick: every ``checkpoints/step-N/lora*.safetensors`` (live and EMA), then
    ``final/``. ``label`` is the path inside the run folder."""
    paths = RunPaths(Path(run_dir))
    out = []
    if paths.checkpoints.is_dir():
        for d in sorted(d for d in paths.checkpoints.glob("step-*") if checkpoint_matches_marker(d) is not False):
            step = int(d.name.split("-")[1])
            for name in ("lora.safetensors", "lora_ema.safetensors"):
                if (d / name).is_file():
                    out.append({"step": step, "file": str(d / name), "label": f"checkpoints/{d.name}/{name}",
                                "weights": "ema" if "ema" in name else "live", "final": False})
    if paths.final.is_dir():
        final_step = max((c["step"] for c in out), default=0)
        for name in ("lora.safetensors", "lora_ema.safetensors"):
            if (paths.final / name).is_file():
                out.append({"step": final_step, "file": str(paths.final / name), "label": f"final/{name}",
                            "weights": "ema" if "ema" in name else "live", "final": True})
    return out


def resolve_checkpoint(run_dir: str | Path, checkpoint: str | Path) -> Path:
    """A checkpoint given by label or path, which must be a LoRA file inside the run folder."""
    root = Path(run_dir).resolve()
    p = Path(checkpoint)
    p = (p if p.is_absolute() else root / p).resolve()
    if not p.is_relative_to(root) or p.suffix != ".safetensors" or not p.is_file():
        raise UserError(f"{checkpoint}: not a LoRA file of this run; pick one of its checkpoints")
    return p


# ------------------------------------------------------------------------------------------ measures


def _picture(path: str | Path) -> np.ndarray:
    with Image.open(path) as im:
        im = im.convert("RGB")
        if max(im.size) > MEASURE_SIDE:
            im.thumbnail((MEASURE_SIDE, MEASURE_SIDE), Image.Resampling.BICUBIC)
        return np.asarray(im)


def _demo_expectations(config: Config) -> dict[str, dict[str, Any]] | None:
    """prompt text → what a good demo picture shows, when this run trained the built-in demo character."""
    from trainer.demo import TRIGGER, demo_prompt_specs

    root = Path(config.dataset.path)
    if config.dataset.trigger != TRIGGER or not (root / "demo_manifest.json").is_file():
        return None
    return {p.prompt: p.expected for p in demo_prompt_specs()}


def measure_steps(run_dir: str | Path) -> list[dict[str, Any]]:
    """Per sampled step after 0: ``leakage`` (no-trigger sample vs step 0's, the base model's picture; for the
    demo character, what the picture shows rather than its pixels),
    ``burn`` (mean over trigger samples vs step 0), and for the demo character ``likeness`` and ``adherence``
    (means over trigger samples). Values are None where the pictures needed are missing.

    Measured once per state of the run's files: Review, its recommendation, the verdict and the diagnosis
    each ask, and a page visit asked several times for the same pictures."""
    root = Path(run_dir).resolve()
    return [dict(row) for row in _measured(root, _sample_files_stamp(root))]


def _sample_files_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What :func:`measure_steps` reads (the config and every sample file), by name, size and time."""
    out = []
    for path in [root / "config.toml", *sorted(RunPaths(root).samples.glob("step-*/*"))]:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _measured(root: Path, stamp: tuple) -> tuple[dict[str, Any], ...]:
    return tuple(_measure_steps(root))


def _measure_steps(run_dir: Path) -> list[dict[str, Any]]:
    from trainer.demo.measures import adherence, burn, leakage_scores, likeness, world_leakage_scores

    manifests = sample_manifests(run_dir)
    base = next((m for m in manifests if m["step"] == 0), None)
    if base is None:
        return []
    try:
        expected = _demo_expectations(load_run_config(run_dir))
    except UserError:
        expected = None
    # a picture is compared with step 0's of the same prompt and seed (several seeds per prompt: each its own)
    ref = {sample_key(s): Path(base["dir"]) / s["file"] for s in base["samples"] if s.get("weights", "live") == "live"}
    if expected is not None:
        # likeness only means something where the base model does not already "show" the character (pure
        # noise from an untrained tiny model is full of magenta and yellow)
        base_like = [likeness(_picture(ref[sample_key(s)])) for s in base["samples"]
                     if sample_key(s) in ref and s["kind"] != "no_trigger" and ref[sample_key(s)].is_file()]
        if not base_like or float(np.mean(base_like)) >= BASE_LIKENESS_LIMIT:
            expected = None
    out = []
    for m in manifests:
        if m["step"] == 0:
            continue
        row: dict[str, Any] = {"step": m["step"], "leakage": None, "drift": None, "burn": None,
                               "likeness": None, "adherence": None}
        burns, likes, adh, leaks, drifts = [], [], [], [], []
        for s in m["samples"]:
            if s.get("weights", "live") != "live" or sample_key(s) not in ref:
                continue
            path = Path(m["dir"]) / s["file"]
            if not path.is_file() or not ref[sample_key(s)].is_file():
                continue
            img, ref_img = _picture(path), _picture(ref[sample_key(s)])
            if s["kind"] == "no_trigger":
                # the demo world's pictures can be read: count what changed rather than pixels that moved
                scores = (world_leakage_scores if expected is not None else leakage_scores)(img, ref_img)
                leaks.append(scores["leakage"])
                drifts.append(scores["drift"])
            else:
                burns.append(burn(img, ref_img)["burn_score"])
                if expected is not None:
                    likes.append(likeness(img))
                    if s["prompt"] in expected:
                        adh.append(adherence(img, expected[s["prompt"]]))
        if leaks:
            row["leakage"], row["drift"] = float(np.mean(leaks)), float(np.mean(drifts))
        row["burn"] = float(np.mean(burns)) if burns else None
        row["likeness"] = float(np.mean(likes)) if likes else None
        row["adherence"] = float(np.mean(adh)) if adh else None
        out.append(row)
    return out


def leakage_by_step(run_dir: str | Path) -> list[dict[str, Any]]:
    """How far the no-trigger sample drifted from step 0's (the base model's picture), per sampled step."""
    return [{"step": r["step"], "leakage": r["leakage"], "drift": r["drift"]}
            for r in measure_steps(run_dir) if r["leakage"] is not None]


def dose_by_step(run_dir: str | Path, config: Config | None = None) -> dict[int, float]:
    """The dose reached at each step: (alpha / rank) × the sum of the lr actually used up to it."""
    config = config or load_run_config(run_dir)
    ratio = config.lora.alpha / config.lora.rank
    total, out = 0.0, {}
    for r in read_jsonl(RunPaths(Path(run_dir)).metrics):
        if r.get("skipped"):
            continue
        lr = r.get("lr")
        total += float(lr) if isinstance(lr, int | float) and math.isfinite(lr) else 0.0
        out[int(r["step"])] = total * ratio
    return out


# ------------------------------------------------------------------------------------ recommendation


def recommend_checkpoint(run_dir: str | Path) -> dict[str, Any] | None:
    """The checkpoint to use, with the reason in English and Korean, or None when the run saved none.

    It is the run verdict's checkpoint (:func:`trainer.review.verdict.run_verdict`), so Review recommends what
    Troubleshoot and the Plan say: among the checkpoints judged fit, on the demo character the best by likeness
    + adherence − leakage − burn (burn weighted as the weak score it is there), on any other run the one whose
    dose sits nearest the middle of the preset's zone; with none fit, the furthest along when all are under,
    the least pushed when they went over. ``verdict`` carries the whole judgement.
    """
    from trainer.review.verdict import run_verdict

    load_run_config(run_dir)  # a folder that is not a run is a UserError, before anything is read
    files = [c for c in checkpoint_files(run_dir) if c["weights"] == "live"]
    if not files:
        return None
    verdict = run_verdict(run_dir)
    step = verdict.recommended_step
    if step is None:
        return None
    c = next((c for c in files if c["step"] == step and not c["final"]), None) or next(
        c for c in files if c["step"] == step)
    why = {lang: "; ".join(e[lang] for e in verdict.evidence) for lang in ("en", "ko")}
    reason = {"en": f"{verdict.summary['en']} Why: {why['en']}.", "ko": f"{verdict.summary['ko']} 근거: {why['ko']}."}
    return {"step": step, "file": c["file"], "label": c["label"], "reason": reason,
            "measures": [dict(cv.measures) or {"step": cv.step} for cv in verdict.checkpoints], "verdict": verdict}
