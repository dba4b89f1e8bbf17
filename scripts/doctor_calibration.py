#!/usr/bin/env python
"""Is the doctor right on a run that is not the demo? The demo character's pictures as a user's folder.

    python scripts/doctor_calibration.py                     # train what is missing, then print the tables
    python scripts/doctor_calibration.py --print-only        # the tables from the runs already in --work
    python scripts/doctor_calibration.py --print-only --truth-seeds 16   # the truth on 16 pictures a prompt, kept
    python scripts/doctor_calibration.py --print-only --truth-seeds 16 --edge 16   # and the saves at the edge
    python scripts/doctor_calibration.py --truth-seeds 16 --judged    # and the same runs in the demo's own folder

The demo character's 20 pictures and the 30 prior scenes go into plain folders (no demo manifest); the
``demo-character`` preset trains on them at 0.1x, 1x and 10x its lr (training seeds 42, 1, 2), then with one thing
wrong, its dose in the zone (``FAILURES``: no convolution LoRA, no prior images, one wrong picture, captions that
write the character's look, the trigger an everyday word (three seeds) or written last, pictures in mixed sizes,
every caption the trigger alone). The app judges each save from the model measures alone,
as a user's run; the truth, afterwards, with the demo's own picture measures (likeness, adherence, leakage).

With ``--judged`` the lr sweep is trained again in the demo's own folder (its manifest there: the same pictures
and the same weights, but the demo's judge now reads the samples as the app does, and a finishing run draws again
the saves it reads near its line); printed per save: the judge's likeness on the run's own pictures and on that
larger draw, the app's verdict and the truth.

Printed: per save, the model measures, the demo measures, both verdicts and whether they agree; the run's
verdict and the diagnosis's first cause in both languages; Spearman rank correlations across saves (``PAIRS``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from calibration_folders import write_plain_folders

import words  # noqa: F401  run folders hold their messages worded, as the app and the CLI write them
from trainer.config.schema import from_dict

PRESET = "demo-character"
FAILURES = {  # name -> settings that break the run while its dose stays in the zone
    "no-conv": {"lora.conv_rank": 0},
    "no-prior": {"dataset.reg_path": ""},
    "one-wrong-picture": {"dataset.path": "my-character-one-wrong"},  # a healthy run, one picture not the subject
    "features-captioned": {"dataset.path": "my-character-features"},  # every caption writes the character's look
    "common-trigger": {"dataset.path": "my-character-star", "dataset.trigger": "star"},  # an everyday word
    "trigger-last": {"dataset.path": "my-character-trigger-last"},  # written after the tags kept in place
    "mixed-sizes": {"dataset.path": "my-character-mixed"},  # wide, tall and upscaled pictures, some JPEGs
    "trigger-only": {"dataset.path": "my-character-trigger-only"},  # every caption the trigger alone
}
FAILURE_SEEDS = {"common-trigger": (42, 1, 2)}  # where the training seed decides it (others: seed 42 alone)
HEALTHY = {  # the preset's own run in the other precisions: a healthy run warns of nothing in any of them
    "bf16": {"train.precision": "bf16"},
    "fp16": {"train.precision": "fp16"},  # on the CPU: fp16 autocast with the loss scaler, as on a GPU
}
PAIRS = {  # each model measure and its demo counterpart, for the rank correlations
    "trigger hold ~ likeness": ("trigger_hold", "likeness"),
    "plain hold ~ likeness": ("plain_hold", "likeness"),
    "prior drift ~ leakage": ("prior_drift", "leakage"),
}


def run_config(data: Path, prior: Path, out: Path, factor: float, seed: int, extra: dict):
    from trainer.config.schema import apply_overrides

    raw = {"preset": PRESET, "dataset": {"path": str(data), "trigger": "zxc", "reg_path": str(prior)},
           "save": {"output_dir": str(out)}, "train": {"seed": seed}}
    extra = {k: str(data.parent / v) if k == "dataset.path" else v for k, v in extra.items()}
    cfg = from_dict(apply_overrides(raw, [f"{k}={json.dumps(v)}" for k, v in extra.items()]))
    cfg.optim.lr = cfg.optim.lr * factor
    return cfg


def runs(args) -> list[tuple[str, dict, float, int]]:
    out = [(f"lr{f:g}x-seed{s}", {}, f, s) for s in args.seeds for f in args.factors]
    out.sort(key=lambda r: (r[2] != 1.0, r[3] != 42))  # the preset's own run first
    if not args.skip_failures:
        out[1:1] = [(f"{name}-seed{s}", extra, 1.0, s) for name, extra in FAILURES.items()
                    for s in args.failure_seeds or FAILURE_SEEDS.get(name, (42,))]
    if not args.skip_precisions:
        out += [(f"{name}-seed42", extra, 1.0, 42) for name, extra in HEALTHY.items()]
    return out


def train_missing(args, data: Path, prior: Path) -> None:
    from trainer.train.loop import run_training

    todo = runs(args)
    if args.judged:  # the demo's own folder (written beside the plain ones, with its manifest)
        todo += [(f"judged-{name}", {"dataset.path": "demo-character"}, f, s) for name, _, f, s in todo
                 if name.startswith("lr")]
    if args.first:  # these runs are trained before the others
        todo.sort(key=lambda r: not any(r[0].startswith(f) for f in args.first))
    for name, extra, factor, seed in todo:
        folder = args.work / "runs" / name
        if any(folder.glob("*/*/final/lora.safetensors")):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        t0 = time.perf_counter()
        result = run_training(run_config(data, prior, folder, factor, seed, extra))
        print(f"{name}: {result.status} in {time.perf_counter() - t0:.0f} s", flush=True)


def resampled_truth(run_dir: Path, seeds: int) -> dict[int, dict[str, float]]:
    """step → the demo's likeness, adherence and leakage read on ``seeds`` pictures a prompt drawn again from each
    save (and from the base model for leakage's reference), where the run's own samples are 4 a prompt: the
    measured truth then moves less by which seeds happened to be drawn."""
    out: dict[int, dict[str, float]] = {}
    for step, readings in picture_readings(run_dir, seeds).items():
        values: dict[str, list[float]] = {}
        for r in readings:
            for k in ("likeness", "adherence", "leakage"):
                if k in r:
                    values.setdefault(k, []).append(r[k])
        out[step] = {k: float(np.mean(v)) for k, v in values.items()}
    return out


def picture_readings(run_dir: Path, seeds: int, steps: set[int] | None = None) -> dict[int, list[dict]]:
    """step → the demo's readings of each picture (kind, prompt, seed and what it reads) drawn at ``seeds`` seeds a
    prompt, the run's own sample seeds first, from every save (``steps``: those alone)."""
    import torch

    from trainer.demo.judge import demo_reader
    from trainer.doctor.judges import SamplePicture
    from trainer.io import read_jsonl
    from trainer.models.precision import decide_precision
    from trainer.review.strength import SweepPipelines, lora_loaded
    from trainer.run.contents import load_run_config
    from trainer.run.rundir import RunPaths, complete_checkpoints
    from trainer.run.samples import expand_prompts
    from trainer.sampling import render_batch, sampling_pipeline

    config = load_run_config(run_dir)
    device = torch.device("cpu")
    plan = decide_precision(config.train.precision, device)
    prompts = expand_prompts(config.sample.prompts, config.dataset.trigger)
    batch = [(p, config.sample.seed + k) for p in prompts for k in range(seeds)]
    size = (config.dataset.resolution, config.dataset.resolution)
    saves = dict(complete_checkpoints(RunPaths(run_dir)))
    last = max(r["step"] for r in read_jsonl(run_dir / "metrics.jsonl"))
    saves.setdefault(last, run_dir / "final")

    def draw(pipe, info) -> list[np.ndarray]:
        sampler = sampling_pipeline(pipe, info.family, info.prediction_type)
        with torch.no_grad():
            images = render_batch(sampler, [p["prompt"] for p, _ in batch], config.sample, size, device, plan,
                                  [seed for _, seed in batch])
        return [np.asarray(im.convert("RGB")) for im in images]

    out: dict[int, list[dict]] = {}
    with SweepPipelines().pipeline(config, plan.weight_dtype, device) as (pipe, info):
        base = draw(pipe, info)
        base_pictures = [SamplePicture({"kind": p["kind"], "prompt": p["prompt"]}, im, im)
                         for (p, _), im in zip(batch, base)]
        read = demo_reader(config, base_pictures, force=True)
        if read is None:
            return {}
        for step, folder in sorted(saves.items()):
            if steps is not None and step not in steps:
                continue
            with lora_loaded(pipe, info, folder / "lora.safetensors", config.dataset.trigger, "truth"):
                out[step] = [{"kind": p["kind"], "prompt": p["prompt"], "seed": seed,
                              **read(SamplePicture({"kind": p["kind"], "prompt": p["prompt"]}, im, base_im))}
                             for (p, seed), im, base_im in zip(batch, draw(pipe, info), base)]
    return out


def edge_report(work: Path, run_dir: Path, name: str, steps: list[int], seeds: int, own: int) -> list[str]:
    """The saves the app asks a person to look at (trigger hold just under its line or just past it): the demo's
    likeness on ``seeds`` pictures a prompt, on the run's own ``own`` a prompt (the first seeds), and how often a
    random draw of ``own`` a prompt puts the save on the other side of the likeness line than all ``seeds`` do."""
    from trainer.doctor.verdict import LIKENESS_SHOWS

    cache = work / "truth" / f"{run_dir.parent.parent.name}-{run_dir.name}-edge-{seeds}seeds.json"
    found = {int(k): v for k, v in json.loads(cache.read_text(encoding="utf-8")).items()} if cache.is_file() else {}
    if any(step not in found for step in steps):
        found.update(picture_readings(run_dir, seeds, set(steps) - set(found)))
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({str(k): v for k, v in found.items()}), encoding="utf-8")
    rows, rng = [], np.random.default_rng(0)
    for step in steps:
        by_prompt: dict[str, list[float]] = {}
        for r in found[step]:
            if "likeness" in r:
                by_prompt.setdefault(r["prompt"], []).append(r["likeness"])
        table = np.array(list(by_prompt.values()))  # prompt x seed, the run's own seeds first
        full, first = float(table.mean()), float(table[:, :own].mean())
        draws = [table[:, rng.choice(table.shape[1], own, replace=False)].mean() for _ in range(2000)]
        flips = float(np.mean([(d >= LIKENESS_SHOWS) != (full >= LIKENESS_SHOWS) for d in draws]))
        rows.append(f"| {name} | {step} | {full:.2f} | {first:.2f} | {flips:.0%} |")
    return rows


def cached_truth(work: Path, run_dir: Path, seeds: int) -> dict[int, dict[str, float]]:
    """:func:`resampled_truth`, kept in ``work/truth/`` under the run's own folder name (a run trained again gets a
    new one), so printing the tables again does not draw every save's pictures again."""
    cache = work / "truth" / f"{run_dir.parent.parent.name}-{run_dir.name}-{seeds}seeds.json"
    if cache.is_file():
        return {int(k): v for k, v in json.loads(cache.read_text(encoding="utf-8")).items()}
    out = resampled_truth(run_dir, seeds)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({str(k): v for k, v in out.items()}, indent=1), encoding="utf-8")
    return out


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = (np.argsort(np.argsort(x)).astype(float) for x in (a, b))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


VERDICT_HEADER = ["| run | the app's verdict | recommended | warnings | first cause (en) | first cause (ko) | "
                  "first prescription |", "|---|---|---|---|---|---|---|"]


def verdict_row(name: str, run_dir: Path) -> str:
    """The run's verdict, recommended save, warnings (weak ones marked) and the diagnosis's first cause and
    prescription, as one row under :data:`VERDICT_HEADER`."""
    from trainer.doctor.diagnose import diagnose
    from trainer.doctor.verdict import run_verdict

    v, dg = run_verdict(run_dir), diagnose(run_dir, write=False)
    warned = sorted({f["signal"] + (" (weak)" if f["weak"] else "") for f in dg["observed"]
                     if f["level"] in ("warning", "error")})
    first = next((c for c in dg["causes"] if not c["lesser"]), None)
    rx = next((p for p in dg["prescriptions"] if p["applicable"] and not p["lesser"]), None)
    return (f"| {name} | {v.label} | {v.recommended_step} | {', '.join(warned) or 'none'} | "
            f"{first['title']['en'] if first else '—'} | {first['title']['ko'] if first else '—'} | "
            f"{rx['title']['en'] if rx else '—'} |")


def judged_report(args) -> list[str]:
    """Per save of the lr sweep trained in the demo's own folder: the demo judge's likeness on the run's own
    pictures and on the larger draw the run made at its end, the app's verdict, and the truth."""
    from trainer.demo.judge import demo_labels, demo_measure_steps
    from trainer.doctor.pictures import measure_steps
    from trainer.doctor.verdict import checkpoint_verdicts

    lines = ["| run | step | likeness, own pictures | likeness, larger draw | app verdict | truth |",
             "|---|---|---|---|---|---|"]
    agree = total = 0
    for name, _extra, _factor, _seed in runs(args):
        done = sorted((args.work / "runs" / f"judged-{name}").glob("*/*/final/lora.safetensors"))
        plain = sorted((args.work / "runs" / name).glob("*/*/final/lora.safetensors"))
        if not name.startswith("lr") or not done or not plain:
            continue
        run_dir, plain_dir = done[-1].parent.parent, plain[-1].parent.parent
        truth_rows = (cached_truth(args.work, plain_dir, args.truth_seeds) if args.truth_seeds else
                      {r["step"]: r for r in demo_measure_steps(plain_dir, force=True)})
        truth = demo_labels([{"step": step, **r} for step, r in sorted(truth_rows.items())])
        own = {r["step"]: r for r in demo_measure_steps(run_dir)}
        read = {r["step"]: r for r in measure_steps(run_dir)}
        for cv in checkpoint_verdicts(run_dir):
            larger = read.get(cv.step, {})
            ok = truth.get(cv.step) == cv.label
            agree, total = agree + ok, total + (cv.step in truth)
            lines.append(f"| judged-{name} | {cv.step} | {_f(own.get(cv.step, {}).get('likeness'))} | "
                         + (f"{_f(larger.get('likeness'))} ({larger['judged_per_prompt']} a prompt)"
                            if larger.get("judged_per_prompt") else "—")
                         + f" | {cv.label}{'' if ok else ' ✗'} | {truth.get(cv.step)} |")
    return [*lines, "", f"in the demo's own folder, the app's verdict = the truth at {agree} of {total} saves"]


def report(args) -> int:
    from trainer.demo.judge import demo_checkpoint_labels, demo_measure_steps
    from trainer.demo.judge import demo_labels as demo_labels_of
    from trainer.doctor.model_lines import HOLD_EDGE, HOLD_SHOWS, HOLD_SURE
    from trainer.doctor.model_measures import measures_by_step
    from trainer.doctor.verdict import checkpoint_verdicts
    from trainer.run.contents import load_run_config

    # per pair: (model measure, demo measure, either verdict says over, the run's name)
    pairs: dict[str, list[tuple[float, float, bool, str]]] = {key: [] for key in PAIRS}
    agree = total = sweep_agree = sweep_total = 0
    band: list[tuple[bool, bool]] = []  # saves read under with the hold in its band: (the truth not under, a run's last)
    lines = ["| run | step | trigger hold | plain hold | trigger gain | prior drift | likeness | adherence | leakage | "
             "demo verdict | model verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    verdict_lines = list(VERDICT_HEADER)
    edge_lines = [f"| run | step | likeness, {args.edge} a prompt | on the run's own pictures | a random draw as few "
                  "flips it |", "|---|---|---|---|---|"]
    for name, _extra, _factor, _seed in runs(args):
        run_dirs = sorted((args.work / "runs" / name).glob("*/*/final/lora.safetensors"))
        if not run_dirs:
            print(f"{name}: no finished run in {args.work}", file=sys.stderr)
            continue
        run_dir = run_dirs[-1].parent.parent
        model = measures_by_step(run_dir)
        if args.truth_seeds:
            demo = cached_truth(args.work, run_dir, args.truth_seeds)
            demo_labels = demo_labels_of([{"step": step, **r} for step, r in sorted(demo.items())])
        else:
            demo = {r["step"]: r for r in demo_measure_steps(run_dir, force=True)}
            demo_labels = demo_checkpoint_labels(run_dir, force=True)
        cvs = checkpoint_verdicts(run_dir)
        for cv in cvs:
            m, d = model.get(cv.step, {}), demo.get(cv.step, {})
            truth = demo_labels.get(cv.step)
            if cv.label == "under" and truth and HOLD_EDGE <= (m.get("trigger_hold") or 0.0) < HOLD_SHOWS:
                band.append((truth != "under", cv is cvs[-1]))
            ok = truth == cv.label
            agree += ok
            total += truth is not None
            if name.startswith("lr"):
                sweep_agree += ok
                sweep_total += truth is not None
            cells = [m.get(k) for k in ("trigger_hold", "plain_hold", "trigger_gain", "prior_drift")] + [
                d.get(k) for k in ("likeness", "adherence", "leakage")]
            lines.append(f"| {name} | {cv.step} | {' | '.join(map(_f, cells))} | {truth} | {cv.label}{'' if ok else ' ✗'} |")
            for key, (mk, dk) in PAIRS.items():
                if m.get(mk) is not None and d.get(dk) is not None:
                    pairs[key].append((m[mk], d[dk], truth == "over" or cv.label == "over", name))
        verdict_lines.append(verdict_row(name, run_dir))
        edge = [cv.step for cv in checkpoint_verdicts(run_dir) if cv.label in ("under", "fit")
                and HOLD_EDGE <= (model.get(cv.step, {}).get("trigger_hold") or 0.0) < HOLD_SURE]
        if args.edge and edge:
            own = load_run_config(run_dir).sample.images_per_prompt
            edge_lines += edge_report(args.work, run_dir, name, sorted(edge), args.edge, own)
    print("\n".join(lines))
    print()
    print("\n".join(verdict_lines))
    print()
    if args.edge:
        print("The saves the app asks to look at (trigger hold just under its line), read on more pictures:")
        print("\n".join(edge_lines))
        print()
    if args.judged:
        print("The same runs in the demo's own folder, where the demo's judge reads the pictures as the app does:")
        print("\n".join(judged_report(args)))
        print()
    print(f"model-only verdict = demo-measure verdict at {sweep_agree} of {sweep_total} saves of the 0.1x / 1x / 10x "
          f"runs, {agree} of {total} with the failing runs")
    last = [shown for shown, is_last in band if is_last]
    print(f"saves read under with the trigger hold in its band ({HOLD_EDGE}-{HOLD_SHOWS}): {len(band)}, "
          f"{sum(s for s, _ in band)} of them showing the subject; {sum(last)} of the {len(last)} that are a run's last")
    for key, values in pairs.items():  # what the calibration asks: >= 0.8 over the lr sweep's saves
        sweep = [(x, y) for x, y, _, name in values if name.startswith("lr")]
        low = [(x, y) for x, y, _, name in values if name.startswith("lr") and not name.startswith("lr10x")]
        if sweep:
            print(f"Spearman {key}: {spearman(*map(list, zip(*sweep))):.2f} over the {len(sweep)} saves of the lr "
                  f"sweep, {spearman(*map(list, zip(*low))):.2f} over the {len(low)} below 10x")
    for key, values in pairs.items():
        if values:
            a, b, _, _ = zip(*values)
            kept = [(x, y) for x, y, o, _ in values if not o]
            print(f"Spearman {key}: {spearman(list(a), list(b)):.2f} over all {len(values)} saves; "
                  f"{spearman(*map(list, zip(*kept))):.2f} over the {len(kept)} that neither calls over")
    return 0 if agree == total else 1


def _f(v) -> str:
    return "—" if v is None else f"{v:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("runs/doctor-calibration"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2])
    ap.add_argument("--factors", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    ap.add_argument("--skip-failures", action="store_true")
    ap.add_argument("--failure-seeds", type=int, nargs="+", default=[], metavar="SEED",
                    help="train every failing run on these training seeds (default: FAILURE_SEEDS, else seed 42)")
    ap.add_argument("--skip-precisions", action="store_true")
    ap.add_argument("--first", nargs="+", default=[], metavar="NAME",
                    help="train the runs whose names start with these first (e.g. lr10x)")
    ap.add_argument("--print-only", action="store_true")
    ap.add_argument("--truth-seeds", type=int, default=0, metavar="N",
                    help="read the truth on N pictures a prompt drawn again from each save (0: the run's own samples)")
    ap.add_argument("--edge", type=int, default=0, metavar="N", help="at the saves whose trigger hold sits just under "
                    "its line, read N pictures a prompt: how often the run's own few could put them on either side")
    ap.add_argument("--judged", action="store_true",
                    help="train the lr sweep in the demo's own folder too and compare the app's verdict there")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    data, prior = write_plain_folders(args.work)
    if not args.print_only:
        train_missing(args, data, prior)
    return report(args)


if __name__ == "__main__":
    raise SystemExit(main())
