#!/usr/bin/env python
"""What the live checks would say of runs already trained: the detectors on the step numbers, replayed.

    python scripts/replay_detectors.py runs/doctor-calibration           # every run folder under it
    python scripts/replay_detectors.py RUN_DIR [RUN_DIR ...] --every 25

While a run trains, the loop reads its rows so far every ``guard.detect_every`` steps and raises each finding once
(``trainer.train.recovery.Recovery.run_detectors``). Here the rows of each run's ``metrics.jsonl`` are cut at every
such step and the detectors of the step numbers (loss trend, gradient spikes, weight growth, clipping, the fp16 loss
scale, slowdowns: ``trainer.doctor.detectors``) read them as they would have then, with today's code: a warning a
healthy run would raise live shows as a row here, where ``events.jsonl`` holds what older code raised. The dose and
the model measures' warnings read the run's saves and status, not its rows, and are not replayed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import words
from trainer.doctor.registry import RunInputs, detectors
from trainer.io import read_jsonl
from trainer.run.contents import load_run_config
from trainer.run.events import StepRow


def run_folders(paths: list[Path]) -> list[Path]:
    """The run folders given, or found under the folders given (any depth), in name order."""
    out = []
    for p in paths:
        out += [p] if (p / "metrics.jsonl").is_file() else sorted(m.parent for m in p.rglob("metrics.jsonl"))
    return out


def replay(run_dir: Path, every: int | None = None) -> list[tuple[int, str, str, str]]:
    """(step, signal, level, English message) of each finding the live checks would raise first, in step order."""
    config = load_run_config(run_dir)
    rows = [StepRow.parse(r) for r in read_jsonl(run_dir / "metrics.jsonl")]
    plan_file = run_dir / "plan.json"
    plan = json.loads(plan_file.read_text(encoding="utf-8")) if plan_file.is_file() else {}
    every = every or config.guard.detect_every
    # those that read the rows alone: one that reads the run folder (the dose, against the saves' measures) would read
    # its end, not the step replayed
    by_rows = [d for d in detectors("numbers") if "rows" in d.reads and "run_dir" not in d.reads]
    seen: dict[str, tuple[int, str, str, str]] = {}
    for n, row in enumerate(rows, 1):
        if row.step % every and n < len(rows):
            continue
        for f in (f for d in by_rows for f in d.run(RunInputs(config, plan, rows[:n]))):
            if f.signal not in seen and f.level in ("warning", "error"):
                seen[f.signal] = (row.step, f.signal, f.level, words.say(f.message, "en"))
    return sorted(seen.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", type=Path, nargs="+", help="run folders, or folders holding them")
    ap.add_argument("--every", type=int, default=None, help="steps between readings (default: the run's own)")
    args = ap.parse_args()
    print("| run | step | finding | level | what it says |\n|---|---|---|---|---|")
    for run in run_folders(args.paths):
        found = replay(run, args.every)
        name = f"{run.parent.parent.name}/{run.parent.name}/{run.name}"
        if not found:
            print(f"| {name} | — | none | | |")
        for step, signal, level, said in found:
            print(f"| {name} | {step} | {signal} | {level} | {said[:140]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
