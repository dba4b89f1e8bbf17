"""What a run's sample pictures show, step by step: burn (colours past the training pictures' own), pixel drift
of no-trigger pictures from the base model's, and what a registered picture judge reads (likeness, adherence,
leakage: :mod:`trainer.doctor.judges`); the dose each step reached; and the same pictures' findings while the
run trains."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from trainer.config.schema import Config
from trainer.doctor.detectors import Finding
from trainer.doctor.judge_files import RUN_JUDGE, choose_judge, chosen_judge
from trainer.doctor.judges import JudgeFailed, SamplePicture, guarded_reader
from trainer.doctor.registry import detector
from trainer.errors import UserError
from trainer.io import read_jsonl
from trainer.message import Msg, msg
from trainer.picture_measures import burn_from_stats, colour_stats, leakage_scores
from trainer.run.contents import load_run_config, sample_manifests
from trainer.run.rundir import RunPaths
from trainer.run.samples import prompt_kind, sample_key

LEAKAGE_LIMIT = 0.5  # the no-trigger sample has drifted this far from the base model's: the LoRA leaks


BURN_LIMIT = 0.5  # trigger samples this far past the training pictures' own saturation and edge roughness


ADHERENCE_SLACK = 0.15  # adherence this far under its best counts as "the prompt starts to be ignored"


MEASURE_SIDE = 128  # pictures are measured at most this big: the measures need shapes and colours, not detail


DATA_PICTURES = 64  # the training pictures' colours are read from at most this many of them


def picture_array(path: str | Path) -> np.ndarray:
    """A picture as HxWx3 uint8, at most ``MEASURE_SIDE`` a side: what the measures and judges read."""
    with Image.open(path) as opened:
        im = opened.convert("RGB")
        if max(im.size) > MEASURE_SIDE:
            im.thumbnail((MEASURE_SIDE, MEASURE_SIDE), Image.Resampling.BICUBIC)
        return np.asarray(im)


def measure_steps(run_dir: str | Path) -> list[dict[str, Any]]:
    """Per sampled step after 0: ``leakage`` (the no-trigger sample against step 0's, the base model's picture:
    its pixel drift, or what a judge reads in it where one applies), ``burn`` (trigger samples past the training
    pictures' own colours; ``burn_by_kind`` per prompt kind), and where a judge applies ``likeness`` and
    ``adherence`` (means over trigger samples) with the judge's name. Values are None where the pictures needed
    are missing.

    Measured once per state of the run's files: Review, its recommendation, the verdict and the diagnosis
    each ask, and a page visit asked several times for the same pictures."""
    root = Path(run_dir).resolve()
    return [dict(row) for row in _measured(root, _sample_files_stamp(root))[0]]


def judge_problem(run_dir: str | Path) -> Msg | str | None:
    """Why the picture judge this run names could not read its pictures (its message: which model, what failed,
    what to do), or None. The pictures are then measured without it, as by a run that names none."""
    root = Path(run_dir).resolve()
    return _measured(root, _sample_files_stamp(root))[1]


def _sample_files_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What :func:`measure_steps` reads (the config, the judge chosen after training, every sample file, Review's
    larger draws and the save files they are valid for), by name, size and time."""
    out = []
    paths = RunPaths(root)
    saves = [*sorted(paths.checkpoints.glob("step-*/lora*.safetensors")), *sorted(paths.final.glob("lora*.safetensors"))]
    for path in [root / "config.toml", root / RUN_JUDGE, *sorted(paths.samples.glob("step-*/*")), *larger_draws(root), *saves]:
        try:
            st = path.stat()
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


def larger_draws(root: Path) -> list[Path]:
    """The manifests of the larger draws Review made of this run's saves (``review/<checkpoint>/more-<n>/``,
    :mod:`trainer.review.more`)."""
    return sorted((root / "review").glob("*/more-*/manifest.json"))


def judge_key(name: str, config: Config | None) -> list[str]:
    """Which judge read a draw: its kind and the model the run names (two CLIP models read differently)."""
    return [name, config.measure.judge if config is not None else ""]


def _larger_readings(root: Path, key: list[str]) -> dict[int, dict[str, Any]]:
    """step → what the judge of ``key`` read on the largest draw Review made of that save's live weights, with how
    many pictures a prompt it read (``judged_per_prompt``): these supersede its reading of the run's own few
    samples. A draw read by another judge (or model) does not count."""
    out: dict[int, dict[str, Any]] = {}
    for path in larger_draws(root):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        step, n = data.get("step"), data.get("per_prompt") or 0
        if not _same_file(data.get("lora"), data.get("lora_mtime")):  # the save's file changed since: stale
            continue
        read_by = data.get("judge_key") or [data.get("judge"), ""]  # drawn before the key was kept: the kind alone
        if read_by != key or data.get("weights") != "live" or not isinstance(step, int) \
                or not data.get("readings") or n <= out.get(step, {}).get("judged_per_prompt", 0):
            continue
        out[step] = {**data["readings"], "judged_per_prompt": n}
    return out


def _same_file(path: Any, mtime: Any) -> bool:
    try:
        return isinstance(path, str) and Path(path).stat().st_mtime == mtime
    except OSError:
        return False


def read_with_judge(run_dir: str | Path, name: str) -> None:
    """:func:`~trainer.doctor.judge_files.choose_judge`, then the run read with it: a judge whose files passed the
    check but whose model does not load is taken back (the one chosen before stays) and its message raised."""
    before = chosen_judge(run_dir)
    choose_judge(run_dir, name)
    problem = judge_problem(run_dir) if name.strip() else None
    if problem is not None:
        choose_judge(run_dir, before, check=False)
        raise UserError(msg("error.judge.not_kept", problem=problem))


@functools.lru_cache(maxsize=16)
def _measured(root: Path, stamp: tuple) -> tuple[tuple[dict[str, Any], ...], Msg | str | None]:
    rows, problem = _measure_steps(root)
    return tuple(rows), problem


def _base_pictures(base: dict[str, Any]) -> dict[tuple, tuple[dict[str, Any], Path]]:
    """Step 0's live samples (the base model's pictures) by prompt and seed."""
    return {sample_key(s): (s, Path(base["dir"]) / s["file"]) for s in base["samples"]
            if s.get("weights", "live") == "live" and (Path(base["dir"]) / s["file"]).is_file()}


def _step_pictures(m: dict[str, Any], ref: dict[tuple, tuple[dict[str, Any], Path]]) -> list[SamplePicture]:
    out = []
    for s in m["samples"]:
        path = Path(m["dir"]) / s["file"]
        if s.get("weights", "live") != "live" or sample_key(s) not in ref or not path.is_file():
            continue
        image, base = _readable(path), _readable(ref[sample_key(s)][1])
        if image is not None and base is not None:
            out.append(SamplePicture(s, image, base))
    return out


def _readable(path: Path) -> np.ndarray | None:
    """:func:`picture_array`, or None for a picture that cannot be read (cut short: a copy of the run folder still
    arriving): measured as a missing one is, not a failure of the whole run's reading."""
    try:
        return picture_array(path)
    except (OSError, ValueError):
        return None


def _run_pictures(run_dir: Path) -> tuple[list[dict[str, Any]], dict[tuple, Any], Config | None] | None:
    """The run's sample manifests, step 0's pictures by prompt and seed, and its config (None when unreadable);
    None when step 0 was never sampled."""
    manifests = sample_manifests(run_dir)
    base = next((m for m in manifests if m["step"] == 0), None)
    if base is None:
        return None
    try:
        config: Config | None = load_run_config(run_dir)
    except UserError:
        config = None
    chosen = chosen_judge(run_dir)  # a judge chosen after the run trained reads it in place of its own
    if config is not None and chosen:
        config = config.model_copy(update={"measure": config.measure.model_copy(update={"judge": chosen})})
    return manifests, _base_pictures(base), config


def judged_means(read: Callable[[SamplePicture], dict[str, float]] | None,
                 pictures: list[SamplePicture]) -> dict[str, float]:
    """The means over a step's pictures of what a judge's reader says of each (nothing without a reader)."""
    if read is None:
        return {}
    values: dict[str, list[float]] = {}
    for pic in pictures:
        for k, v in read(pic).items():
            values.setdefault(k, []).append(v)
    return {k: float(np.mean(v)) for k, v in values.items()}


def run_judge(run_dir: str | Path) -> tuple[Any, Callable[[SamplePicture], dict[str, float]], list[str]] | None:
    """The picture judge that applies to this run, decided on its step-0 pictures, with its reader and its
    :func:`judge_key`; None when no judge applies or step 0 was never sampled."""
    run = _run_pictures(Path(run_dir).resolve())
    if run is None:
        return None
    _, ref, config = run
    found = guarded_reader(config, _base_samples(ref))  # a judge that fails: one message (JudgeFailed)
    return None if found is None else (found[0], found[1], judge_key(found[0].name, config))


def _base_samples(ref: dict[tuple, tuple[dict[str, Any], Path]]) -> list[SamplePicture]:
    read = [(s, _readable(p)) for s, p in ref.values()]
    return [SamplePicture(s, a, a) for s, a in read if a is not None]


def judge_rows(run_dir: Path, reader_of: Callable[[Config | None, list[SamplePicture]], Any]) -> list[dict[str, Any]]:
    """Per sampled step after 0, the means of what ``reader_of(config, step-0 pictures)``'s reader says of each
    sample (nothing when it returns None)."""
    found = _run_pictures(run_dir)
    if found is None:
        return []
    manifests, ref, config = found
    read = reader_of(config, _base_samples(ref))
    if read is None:
        return []
    return [{"step": m["step"], **judged_means(read, _step_pictures(m, ref))} for m in manifests if m["step"] != 0]


def training_pictures(config: Config | None, most: int) -> list[Path]:
    """At most ``most`` of the run's training pictures, spread over its dataset folder (none when the folder is
    not here: a run from another machine)."""
    from trainer.data.folders import IMAGE_SUFFIXES, is_mask

    root = Path(config.dataset.path) if config is not None else None
    if root is None or not root.is_dir():
        return []
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file() and not is_mask(p))
    return files[:: max(1, len(files) // most)][:most]


@functools.lru_cache(maxsize=8)
def _data_colours(files: tuple[Path, ...], stamp: tuple) -> dict[str, float] | None:
    stats = []
    for p in files:
        try:
            stats.append(colour_stats(picture_array(p)))
        except (OSError, ValueError):
            continue
    if not stats:
        return None
    # the data's own most: a LoRA that draws the subject in its own colours has not burnt it
    return {k: float(np.percentile([s[k] for s in stats], 90)) for k in stats[0]}


def data_colours(config: Config | None) -> dict[str, float] | None:
    """The training pictures' colour statistics (the 90th percentile of each): what burn is measured against.
    None when the dataset folder is not here (a run from another machine)."""
    files = tuple(training_pictures(config, DATA_PICTURES))
    return _data_colours(files, tuple(p.stat().st_mtime_ns for p in files)) if files else None


def burn_reference(data: dict[str, float], base_image: np.ndarray) -> dict[str, float]:
    """What a trigger sample's colours are measured against for burn: the more of the training pictures' own
    (:func:`data_colours`) and the base model's picture of the same prompt and seed (step 0). A prompt may ask for
    what the data never showed (a night sky is a deep, saturated blue): the base drew that too, and a LoRA that
    keeps it has not burnt it."""
    base = colour_stats(base_image)
    return {k: max(v, base.get(k, v)) for k, v in data.items()}


def _measure_steps(run_dir: Path) -> tuple[list[dict[str, Any]], Msg | str | None]:
    """The rows, and why the judge that applies could not read the pictures (then they are measured without it, and
    :func:`judge_finding` says so: a judge's failure never costs the run its diagnosis, nor a finishing run its end)."""
    run = _run_pictures(run_dir)
    if run is None:
        return [], None
    try:
        return _rows(run_dir, *run, judged=True), None
    except JudgeFailed as e:
        return _rows(run_dir, *run, judged=False), e.msg


def _rows(run_dir: Path, manifests: list[dict[str, Any]], ref: dict[tuple, Any], config: Config | None, *,
          judged: bool) -> list[dict[str, Any]]:
    data = data_colours(config)
    found = guarded_reader(config, _base_samples(ref)) if judged else None
    judge, read = found if found is not None else (None, None)
    larger = _larger_readings(run_dir, judge_key(judge.name, config)) if judge is not None else {}
    out = []
    for m in manifests:
        if m["step"] == 0:
            continue
        row: dict[str, Any] = {"step": m["step"], "leakage": None, "drift": None, "burn": None,
                               "likeness": None, "adherence": None, "judge": judge.name if judge else None}
        pictures = _step_pictures(m, ref)  # each decoded once, for the pixel measures and the judge alike
        by_kind: dict[str, list[float]] = {}  # a prompt kind's burn over its pictures (seeds)
        leaks = []
        for pic in pictures:
            if pic.record["kind"] == "no_trigger":
                leaks.append(leakage_scores(pic.image, pic.base_image)["drift"])
            elif data is not None:
                burn = burn_from_stats(colour_stats(pic.image), burn_reference(data, pic.base_image),
                                       same_content=False)["burn_score"]
                by_kind.setdefault(pic.record["kind"], []).append(burn)
        if leaks:
            row["leakage"] = row["drift"] = float(np.mean(leaks))
        burns = [b for values in by_kind.values() for b in values]
        row["burn"] = float(np.mean(burns)) if burns else None
        row["burn_by_kind"] = {k: float(np.mean(v)) for k, v in by_kind.items()}
        row.update(judged_means(read, pictures))
        row.update(larger.get(m["step"], {}))
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


# ------------------------------------------------------------------------------- live findings


def prior_kept_steps(run_dir: Path) -> set[int]:
    """The steps at which the run's own model says what it draws without the trigger stayed the base's (its prior
    drift measured and under the verdict's limit, or a masked run's drift that is its free backgrounds). There a
    no-trigger picture's pixel drift, a weaker reading of the same question that any weight change on a small model
    moves, raises nothing: healthy runs read 0.15-0.47 on the demo's pictures in a plain folder and up to 0.55 on a
    second subject's six pictures (scripts/doctor_second_subject.py), where the 0.5 line sits."""
    from trainer.doctor.model_lines import DRIFT_LIMIT, backgrounds_moved
    from trainer.doctor.model_measures import measures_by_step

    return {step for step, m in measures_by_step(run_dir).items()
            if m.get("prior_drift") is not None and (m["prior_drift"] <= DRIFT_LIMIT or backgrounds_moved(m))}


@detector(("sample_burn", "leakage"), group="pictures", reads=("samples",))
def sample_findings(samples_dir: Path) -> list[Finding]:
    """Burn (trigger samples past the training pictures' own colours) and leakage (the no-trigger sample moving
    from the base model's: a judge's reading where one applies, else its pixels), as findings while the run
    trains; the verdict reads :func:`measure_steps`."""
    rows = measure_steps(samples_dir.parent)
    burn_hits = [(r["step"], kind, b) for r in rows for kind, b in (r.get("burn_by_kind") or {}).items()
                 if b > BURN_LIMIT]
    kept = prior_kept_steps(samples_dir.parent)
    leak_hits = [(r["step"], r["leakage"]) for r in rows if r["leakage"] is not None and r["leakage"] > LEAKAGE_LIMIT
                 and (r.get("judge") is not None or r["step"] not in kept)]
    out = []
    if burn_hits:
        step, kind, b = burn_hits[0]
        out.append(Finding("sample_burn", "warning", msg("finding.sample_burn", burn=b, step=step, kind=prompt_kind(kind)),
                           sorted({h[0] for h in burn_hits}), {"burn": [[s, k, v] for s, k, v in burn_hits[:12]]}))
    if leak_hits:
        step, leak = leak_hits[0]
        out.append(Finding("leakage", "warning",
                           msg("finding.leakage", leak=leak, step=step),
                           [s for s, _ in leak_hits], {"leakage": [[s, v] for s, v in leak_hits]}))
    return out


@detector("judge_unreadable", group="pictures", reads=("samples",))
def judge_finding(samples_dir: Path) -> Finding | None:
    """The picture judge that applies could not read the run's pictures (its model did not load, or it failed
    reading): none read them. Said at the run's end and in its diagnosis, never a traceback that loses the run."""
    problem = judge_problem(samples_dir.parent)
    if problem is None:
        return None
    return Finding("judge_unreadable", "warning", msg("finding.judge_unreadable", problem=problem), [], {})
