#!/usr/bin/env python
"""What the live checks would say of runs already trained: the detectors a run reads as it trains, replayed.

    python scripts/replay_detectors.py runs/doctor-calibration           # every run folder under it
    python scripts/replay_detectors.py RUN_DIR [RUN_DIR ...] --every 25

While a run trains, the loop reads it every ``guard.detect_every`` steps and after each measured step, and once more
at its end (``trainer.train.loop``), and says each finding once, and again when its word changes
(``trainer.doctor.registry.Reported``). Here each run is cut at every such reading (its ``metrics.jsonl`` rows and its
``measures.jsonl`` rows as they stood then, in a scratch folder whose status says "running", the end read as the
loop reads it) and today's detectors of the step numbers, the plan's dose and the model measures read it: a warning
a healthy run would raise live shows as a row here, where ``events.jsonl`` holds what older code raised. Information
is listed with ``--info`` (always where it takes back a warning, as at the run's end where a warning no longer
holds: "no longer so at the run's end"). The sample pictures are read at the end only, and
are not replayed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import words
from trainer.doctor.registry import Reported, RunInputs, detectors
from trainer.io import read_jsonl
from trainer.run.contents import load_run_config
from trainer.run.events import StepRow
from trainer.run.rundir import RunPaths


def run_folders(paths: list[Path]) -> list[Path]:
    """The run folders given, or found under the folders given (any depth), in name order."""
    out = []
    for p in paths:
        out += [p] if (p / "metrics.jsonl").is_file() else sorted(m.parent for m in p.rglob("metrics.jsonl"))
    return out


def _cut(folder: Path, measures: list[tuple[int, str]], upto: int, config: str) -> Path:
    """``folder`` as the run folder stood when its measures reached step ``upto``: its config, status "running",
    the measures file's lines up to that step."""
    paths = RunPaths(folder)
    paths.config.write_text(config, encoding="utf-8")
    paths.status.write_text(json.dumps({"status": "running"}), encoding="utf-8")
    paths.measures.write_text("".join(line for step, line in measures if step <= upto), encoding="utf-8")
    return folder


def replay(run_dir: Path, every: int | None = None, info: bool = False) -> list[tuple[int, str, str, str]]:
    """(step, signal, level, English message) of each word the live checks would say, in the order they would
    say it: warnings and errors, and information that takes one back (``info``: all information too)."""
    config = load_run_config(run_dir)
    config_text = RunPaths(run_dir).config.read_text(encoding="utf-8")
    rows = [StepRow.parse(r) for r in read_jsonl(run_dir / "metrics.jsonl")]
    plan_file, measures_file = run_dir / "plan.json", RunPaths(run_dir).measures
    plan = json.loads(plan_file.read_text(encoding="utf-8")) if plan_file.is_file() else {}
    lines = measures_file.read_text(encoding="utf-8").splitlines(keepends=True) if measures_file.is_file() else []
    measures = [(int(json.loads(line)["step"]), line) for line in lines if line.strip()]
    every = every or config.guard.detect_every
    # the loop reads "numbers" and, on a run that measures itself, "model" (the registry's collect skips the numbers
    # without a plan; a replay of rows alone still reads them)
    groups = ("numbers", *(("model",) if measures else ()))
    live = detectors(*groups)
    measured_at = {s for s, _ in measures}
    reported, warned, out = Reported(), set(), []
    with tempfile.TemporaryDirectory() as tmp:
        for n, row in enumerate(rows, 1):
            readings = ([(row.step - 1, False)] if row.step % every == 0 else []) + (
                [(row.step, False)] if row.step in measured_at else []) + ([(row.step, True)] if n == len(rows) else [])
            for upto, end in readings:  # the step's reading comes before its measures; the end after all
                run = RunInputs(config, plan, rows[:n], run_dir=_cut(Path(tmp), measures, upto, config_text), stopped=end)
                for f in reported.news([f for d in live for f in d.run(run)], groups, row.step, end):
                    if f.level in ("warning", "error") or f.signal in warned or info:
                        out.append((row.step, f.signal, f.level, words.say(f.message, "en")))
                    if f.level in ("warning", "error"):
                        warned.add(f.signal)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", type=Path, nargs="+", help="run folders, or folders holding them")
    ap.add_argument("--every", type=int, default=None, help="steps between readings (default: the run's own)")
    ap.add_argument("--info", action="store_true", help="list the information said too, not only warnings")
    args = ap.parse_args()
    print("| run | step | finding | level | what it says |\n|---|---|---|---|---|")
    for run in run_folders(args.paths):
        found = replay(run, args.every, args.info)
        name = f"{run.parent.parent.name}/{run.parent.name}/{run.name}"
        if not found:
            print(f"| {name} | — | none | | |")
        for step, signal, level, said in found:
            print(f"| {name} | {step} | {signal} | {level} | {said[:140]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
