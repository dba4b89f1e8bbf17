"""Review a run from its folder: the checkpoint × prompt grid and the recommended checkpoint.

The pictures' measures are :mod:`trainer.doctor.pictures`; the strength sweep, which draws, is
:mod:`trainer.review.strength`. The rule for picking (docs/training-guide.md, "Reading the saves"):
the best checkpoint sits between "fits" and "starting to overfit", and the last save is rarely it. With the
demo character the pictures can be measured (likeness, adherence); for any run the no-trigger sample can be
compared with the base model's (leakage) and the trigger samples with step 0 (burn).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.message import msg
from trainer.run.contents import checkpoint_files, load_run_config, sample_manifests

Progress = Callable[[int, int], None]


# ------------------------------------------------------------------------------------------- reading


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


# ------------------------------------------------------------------------------------------ measures


# ------------------------------------------------------------------------------------ recommendation


def recommend_checkpoint(run_dir: str | Path) -> dict[str, Any] | None:
    """The checkpoint to use, with the reason (a message), or None when the run saved none.

    It is the run verdict's checkpoint (:func:`trainer.doctor.verdict.run_verdict`), so Review recommends what
    Troubleshoot and the Plan say: among the checkpoints judged fit, on the demo character the best by likeness
    + adherence − leakage − burn (burn weighted as the weak score it is there), on any other run the one whose
    dose sits nearest the middle of the preset's zone; with none fit, the furthest along when all are under,
    the least pushed when they went over. ``verdict`` carries the whole judgement.
    """
    from trainer.doctor.verdict import run_verdict

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
    why = functools.reduce(lambda a, b: msg("joined", first=a, rest=b), verdict.evidence)
    reason = msg("review.reason", summary=verdict.summary, why=why)
    return {"step": step, "file": c["file"], "label": c["label"], "reason": reason,
            "measures": [dict(cv.measures) or {"step": cv.step} for cv in verdict.checkpoints], "verdict": verdict}
