"""What the run's own model says about each measured step (``measures.jsonl``, written by
:mod:`trainer.train.probes`), for any subject and any family:

- ``trigger_hold``: how much better the model, given the trigger alone, denoises the subject's pictures than the
  base model did with it, beyond what the LoRA did to pictures that are not the subject: 1 − (the subject's loss
  against step 0's) / (the base model's own no-trigger samples' loss with the LoRA against without it, at least 1),
  at the middle timesteps. Only what the LoRA learned of the subject counts, not what it did to every picture: a
  run whose lr broke the model denoises the subject worse than the base did (its plain hold is below 0) while its
  pictures still show the subject's colours, and the plain hold then orders its saves against what they show.
  Without those samples (sampling off) it is the plain hold: the prior pictures are trained on, so they cannot say
  what the LoRA did elsewhere. This is what the verdict reads for "under": on the demo world's pictures in a plain
  folder it follows the demo's likeness (scripts/doctor_calibration.py).
- ``plain_hold``: the subject's side alone (1 − the loss's ratio to step 0's), shown beside it.
- ``trigger_gain``: how much better the subject's pictures are denoised with the trigger in their captions than
  with it taken out, relative to the loss without it, less the same at step 0 (0 at step 0). A trigger that
  carries the subject makes the caption with it predict the picture better. Shown, not judged by: it follows the
  trigger's own embedding more than the pictures (at 0.1x the lr it was the highest of all runs).
- ``prior_drift``: how far the LoRA moved the prediction on pictures without the trigger (the base model's own
  step-0 no-trigger samples, which it never trains on; without them the prior pictures), as a share of the base
  model's own error on them (0 at step 0).
- ``trigger_share`` (masked runs): on the same pictures, the no-trigger prompt with the trigger put in, against
  the base model's prediction: the share of that move the trigger itself adds beyond the LoRA's prediction without
  it. Masked training leaves the backgrounds free to move, so a masked run's prior drift passes its line whether
  or not the subject leaks; where the captions' other words (place, size, background) learnt the subject, the
  trigger adds little to a prompt that already draws it (the demo world's masked runs with their captions as
  written: 0.07-0.18), where the captions name the subject alone it adds much (0.33-0.62).
- ``memorisation``: the held-out pictures' loss against the training pictures' at the same timesteps, as a change
  from step 0's ratio (None without held-out pictures).
- per picture: each training picture's own trigger gain, so one the trigger learned unlike the rest (a picture
  that is not the subject, a caption that leaves out what it shows) can be named.

Pure Python over the file: no torch, so Review and the diagnosis read it cheaply.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainer.doctor.registry import detector
from trainer.io import read_jsonl
from trainer.message import chained, msg
from trainer.run.rundir import RunPaths

# A picture whose own trigger gain is this many robust deviations (MAD × 1.4826) from the others' stands apart.
# Measured (scripts/doctor_calibration.py): one picture of the demo's 20 replaced by a world scene, its caption
# kept, stood 9-11 deviations apart at every save; in healthy runs no picture stood more than 3.3 apart.
OUTLIER_Z = 5.0
OUTLIER_MIN_PICTURES = 6  # fewer pictures than this: no "the others" to stand apart from
OUTLIER_MIN_GAP = 0.5  # and at least this far from the median gain: a tiny spread flags nothing
NEARLY_ALL = 0.9  # a tag on this share of the pictures or more (the trigger) groups nothing


def read_rows(run_dir: str | Path) -> dict[int, dict[str, Any]]:
    """The measures file's rows by step (the last row of a step wins: a rollback measures a step again)."""
    return {int(r["step"]): r for r in read_jsonl(RunPaths(Path(run_dir)).measures) if "step" in r}


def _total(pictures: dict[str, dict], name: str, at: list[int] | None = None) -> float:
    """The sum over pictures and timesteps (``at``: their indices; all when None) of one kind of loss in a row's
    set."""
    return sum(sum(x for i, x in enumerate(v[name]) if at is None or i in at) for v in pictures.values())


def middle_timesteps(timesteps: list[int], num_train_timesteps: int = 1000) -> list[int]:
    """The indices of the timesteps in the middle half of the schedule, where a picture's shapes and details are
    decided (at low noise the picture is all but given, at high noise only its layout is); all of them when none
    falls there."""
    mid = [i for i, t in enumerate(timesteps) if 0.25 * num_train_timesteps <= t <= 0.75 * num_train_timesteps]
    return mid or list(range(len(timesteps)))


def _subject_ratio(subject: dict[str, dict], subject0: dict[str, dict], at: list[int]) -> float | None:
    """The subject's loss with the trigger alone against step 0's (the base model's)."""
    start = _total(subject0, "trigger", at)
    return _total(subject, "trigger", at) / start if start > 0 else None


def _elsewhere_ratio(others: dict[str, dict], at: list[int]) -> float:
    """How the LoRA changed the denoising of pictures that are not the subject: their loss with it against without
    it (at least 1: a LoRA that denoises the base's own pictures better than the base is not held against the
    subject)."""
    base = _total(others, "base", at)
    return max(1.0, _total(others, "lora", at) / base) if base > 0 else 1.0


def _relative_gain(subject: dict[str, dict], without: str, with_: str) -> float | None:
    base = _total(subject, without)
    return (base - _total(subject, with_)) / base if base > 0 else None


def _drift(prior: dict[str, dict]) -> float | None:
    base = _total(prior, "base")
    return _total(prior, "move") / base if base > 0 else None


def _trigger_share(prior: dict[str, dict]) -> float | None:
    """Of how far a no-trigger prompt with the trigger put in moves the prediction from the base model's, the share
    the trigger itself adds (None where the row has no such reading: an unmasked run, an older file)."""
    if not prior or any("reach" not in v or "add" not in v for v in prior.values()):
        return None
    reach = _total(prior, "reach")
    return _total(prior, "add") / reach if reach > 0 else None


def _mean_loss(pictures: dict[str, Any], name: str | None = "caption") -> float | None:
    values = [x for v in pictures.values() for x in (v[name] if name else v)]
    return sum(values) / len(values) if values else None


def measures_by_step(run_dir: str | Path) -> dict[int, dict[str, Any]]:
    """step → ``trigger_hold`` (the trigger alone against the base model's, beyond the LoRA's change elsewhere:
    what the verdict reads), ``plain_hold`` (without that),
    ``trigger_gain`` (the caption against the same caption without the trigger, less step 0's), ``prior_drift``,
    ``prior_source`` and ``memorisation`` (None where the pictures it needs were not measured), for every measured
    step; {} without a measures file."""
    return measures_from_rows(read_rows(run_dir))


def measures_from_rows(rows: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """:func:`measures_by_step` from the rows already read (:func:`read_rows`)."""
    base = rows.get(0)
    if base is None:
        return {}
    subject0 = base.get("subject")
    mid = middle_timesteps(base.get("timesteps") or [500])
    gain0 = _relative_gain(subject0, "bare", "caption") if subject0 else None
    ratio0 = _held_ratio(base)
    out = {}
    for step, r in sorted(rows.items()):
        subject = r.get("subject")
        source = next((name for name in ("base_samples", "prior") if r.get(name)), None)
        gain, ratio = _relative_gain(subject, "bare", "caption") if subject else None, _held_ratio(r)
        ratio_s = _subject_ratio(subject, subject0, mid) if subject and subject0 else None
        # only the base model's own samples: the prior pictures are trained on, so the LoRA is pulled to fit them
        elsewhere = _elsewhere_ratio(r["base_samples"], mid) if r.get("base_samples") else 1.0
        out[step] = {"trigger_hold": None if ratio_s is None else 1.0 - ratio_s / elsewhere,
                     "plain_hold": None if ratio_s is None else 1.0 - ratio_s,
                     "trigger_gain": None if gain is None or gain0 is None else gain - gain0,
                     "prior_drift": _drift(r[source]) if source else None, "prior_source": source,
                     "trigger_share": _trigger_share(r[source]) if source else None,
                     "memorisation": None if ratio is None or ratio0 is None else ratio / ratio0 - 1.0,
                     "masked": bool(r.get("masked"))}
    return out


def _held_ratio(row: dict[str, Any]) -> float | None:
    held, subject = row.get("held_out"), row.get("subject")
    if not held or not subject:
        return None
    train, other = _mean_loss(subject), _mean_loss(held, None)
    return other / train if train and other is not None else None


def _picture_gain(v: dict[str, list[float]]) -> float | None:
    bare = sum(v["bare"])
    return (bare - sum(v["caption"])) / bare if bare > 0 else None


def picture_outliers(run_dir: str | Path, step: int | None = None,
                     rows: dict[int, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The training pictures the trigger learned unlike the others between step 0 and ``step`` (the last
    measured step by default): each picture's own trigger gain (its caption against the same caption without
    the trigger) is compared with the others'. ``side`` "high": the trigger carries this picture far more than
    the rest (the picture is not the subject, or its caption leaves out what it shows, so the trigger is made to
    carry it); "low": far less (the caption already describes the subject's look, or the subject is missing).
    With its robust ``z`` and ``gain``; most apart first. ``rows``: the measures file already read."""
    rows = read_rows(run_dir) if rows is None else rows
    if not rows.get(0, {}).get("subject"):
        return []
    step = max(rows) if step is None else step
    if step == 0 or not rows.get(step, {}).get("subject"):
        return []
    first, last = rows[0]["subject"], rows[step]["subject"]
    gains = {}
    for key, v in last.items():
        g, g0 = _picture_gain(v), _picture_gain(first[key]) if key in first else None
        if g is not None and g0 is not None:
            gains[key] = g - g0
    if len(gains) < OUTLIER_MIN_PICTURES:
        return []
    median = statistics.median(gains.values())
    out = []
    for key, v in gains.items():
        z, gap = _apart(v, list(gains.values()))
        if abs(z) >= OUTLIER_Z and abs(gap) >= OUTLIER_MIN_GAP:
            out.append({"picture": key, "side": "high" if gap > 0 else "low", "z": round(z, 2),
                        "gain": round(v, 4), "median_gain": round(median, 4)})
    tags = _picture_tags(run_dir, rows[0], gains) if out else {}
    out = [o for o in out if _apart_among_its_own(o["picture"], gains, tags)]
    return sorted(out, key=lambda o: -abs(o["z"]))


def _apart(value: float, values: list[float]) -> tuple[float, float]:
    """(robust z, gap) of ``value`` against the median of ``values``."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values) * 1.4826
    gap = value - median
    return (gap / mad if mad > 0 else math.inf if gap else 0.0), gap


def _picture_tags(run_dir: str | Path, first: dict[str, Any], pictures: Iterable[str]) -> dict[str, set[str]]:
    """Each measured picture's caption tags: from the measures' step-0 row, or (a run measured before it kept
    them) the caption files beside the pictures; {} where neither can be read."""
    from trainer.data.caption_doctor import caption_tags

    captions = first.get("captions")
    if not captions:
        try:
            from trainer.run.contents import load_run_config

            data = load_run_config(run_dir).dataset
            captions = {k: (Path(data.path) / k).with_suffix(data.caption_ext).read_text(encoding="utf-8")
                        for k in pictures}
        except Exception:  # no config, a folder moved or a caption gone: the pictures are judged one by one
            return {}
    return {k: set(caption_tags(text)) for k, text in captions.items()}


def _apart_among_its_own(key: str, gains: dict[str, float], tags: dict[str, set[str]]) -> bool:
    """Whether a picture apart from all the others is apart from the pictures whose captions share each of its tags
    too (a tag on at least ``OUTLIER_MIN_PICTURES`` of them and not on nearly all). What a tag shows can set its
    pictures apart together: where the character's look was written in every caption, the trigger carried the six
    "on grass" pictures most (gains 0.43-1.44, the others 0.15-0.24), and one to four of them passed the line on
    two training seeds while among the six none stood apart. A picture that is not the subject stands apart among
    its own as well (the wrong picture: z 6.7 among the "on sky" ones)."""
    for tag in tags.get(key, set()):
        group = [gains[k] for k in gains if tag in tags.get(k, set())]
        if OUTLIER_MIN_PICTURES <= len(group) < NEARLY_ALL * len(gains):
            z, gap = _apart(gains[key], group)
            if abs(z) < OUTLIER_Z or abs(gap) < OUTLIER_MIN_GAP:
                return False
    return True


def _drift_held(measured: dict[int, dict[str, Any]], past: set[int], ended: bool) -> bool:
    """Whether the prior drift stayed past its line: at two measured steps in a row, or at the last one of a run
    that has ended. A drift past the line at one step that is back under it at the next is a passing move (batch
    2, scripts/doctor_settings.py: 1.13 and 1.54 at step 400 of 2760, then 0.84-0.87, their no-trigger pictures
    never leaking), not a leak; that save's own verdict still reads it (Review)."""
    steps = sorted(s for s, m in measured.items() if s > 0 and m.get("prior_drift") is not None)
    return any(a in past and b in past for a, b in itertools.pairwise(steps)) or (ended and bool(steps) and steps[-1] in past)


def run_ended(run_dir: str | Path) -> bool:
    """Whether the run has stopped (live, its last save may still come back)."""
    from trainer.run.rundir import RunStatus, run_status

    return run_status(run_dir).get("status") != RunStatus.RUNNING


def over_warnings(measured: dict[int, dict[str, Any]], ended: bool) -> list[Any]:
    """The over-training warnings of the model measures (:func:`measures_by_step`'s rows): no-trigger predictions
    that stayed past the verdict's line (:func:`_drift_held`), training pictures pulling away from the held-out
    ones."""
    from trainer.doctor.detectors import Finding
    from trainer.doctor.model_lines import DRIFT_LIMIT, MEMO_LIMIT, backgrounds_moved

    out = []
    drifted = [(s, m["prior_drift"]) for s, m in measured.items()
               if (m["prior_drift"] or 0.0) > DRIFT_LIMIT and not backgrounds_moved(m)]
    if drifted and _drift_held(measured, {s for s, _ in drifted}, ended):
        step, drift = drifted[0]
        signal = "masked_drift" if measured[step].get("masked") else "prior_drift"
        out.append(Finding(signal, "warning", msg(f"finding.{signal}", drift=drift, step=step, limit=DRIFT_LIMIT),
                           [s for s, _ in drifted], {"prior_drift": [[s, v] for s, v in drifted]}))
    memorised = [(s, m["memorisation"]) for s, m in measured.items() if (m["memorisation"] or 0.0) > MEMO_LIMIT]
    if memorised:
        step, mem = memorised[0]
        out.append(Finding("memorising", "warning", msg("finding.memorising", mem=mem, step=step, limit=MEMO_LIMIT),
                           [s for s, _ in memorised], {"memorisation": [[s, v] for s, v in memorised]}))
    return out


@detector(("prior_drift", "masked_drift", "memorising", "picture_outlier"), group="model", reads=("run_dir", "ended"))
def model_findings(run_dir: str | Path, ended: bool | None = None) -> list[Any]:
    """What the model measures warn of, as the detectors' findings (live after each measured step, and in the
    diagnosis): :func:`over_warnings`, and pictures that learn unlike the rest. ``ended``: the run has stopped (the
    loop's last reading says so before the status file does; None: read the status)."""
    from trainer.doctor.detectors import Finding

    rows = read_rows(run_dir)
    out = over_warnings(measures_from_rows(rows), run_ended(run_dir) if ended is None else ended)
    outliers = picture_outliers(run_dir, rows=rows)
    if outliers:
        named = [msg(f"finding.picture_outlier.{o['side']}", picture=o["picture"]) for o in outliers[:5]]
        out.append(Finding("picture_outlier", "warning",
                           msg("finding.picture_outlier", count=len(outliers), pictures=chained("error.and", named)),
                           [], {"pictures": outliers}))
    return out
