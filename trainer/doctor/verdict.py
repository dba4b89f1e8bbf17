"""One judgement per run and per checkpoint: fit, under, over or broken (or nothing to judge: no step trained),
with the evidence that decided it. Plan, Review, Troubleshoot and the guard's alert all read it from here, so they
cannot disagree. The rule is "judge by pictures, not by the loss" (docs/training-guide.md, "Reading the saves"), so
the evidence is weighed by how much it can be trusted:

- **strong**: the guard's non-finite alert (the run broke); the run's own model at each save, for any subject
  (:mod:`trainer.doctor.model_measures`: does the trigger carry the subject, did what the model draws without it
  move, is it memorising); and a picture judge's reading where one applies (:mod:`trainer.doctor.judges`:
  likeness, adherence to the prompt, whether no-trigger pictures still show what the base drew);
- **moderate**: where nothing strong was measured, the dose ``lr × steps × alpha/rank`` against the preset's zone
  (a rule of thumb) and the pixel measures of the pictures (drift of no-trigger pictures, burn past the training
  pictures' colours);
- **weak**: the same dose and pixels once a strong measure exists (supporting evidence, never the decider), and
  trends of the numbers (loss, weight norm, gradient spikes).

The strongest tier that says anything decides; within a tier, broken > over > under > fit. A weak score never
decides while anything stronger speaks: it is listed as a weak observation, not shown as the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainer.config.schema import Config
from trainer.doctor.evidence import (  # the evidence's vocabulary, used by every reader of a verdict
    LABEL_TEXT,
    STRENGTH_WEIGHT,
    Observation,
    decide,
)
from trainer.doctor.model_lines import (  # the lines the model measures are read against, for the verdict's readers
    DRIFT_LIMIT,
    HOLD_SHOWS,
    model_observations,
)
from trainer.doctor.plan_findings import caption_suspect, captions_alike
from trainer.doctor.progress import failure, still_training, unfinished
from trainer.doctor.registry import RunInputs, collect, detector_for, detectors
from trainer.doctor.risks import sets_own_step, subject_of
from trainer.doctor.verdict_summary import summary_of
from trainer.message import Msg, msg
from trainer.run.rundir import RunPaths, planned_steps, workspace_presets

LIKENESS_SHOWS = 0.5  # a judge's likeness from which the subject is there (the demo's: stripes, eyes, hat)
# A judge's likeness read on the run's own 4 pictures a prompt lay up to 0.18 from its reading on 16 (the 1x
# step-400 saves of eight seeds, scripts/doctor_calibration.py --edge): a save read this near the line is drawn
# again at measure.edge_pictures a prompt once the run ends (trainer/train/edges.py).
LIKENESS_EDGE = 0.2
# Once something strong was measured, the pixel scores (they move with any weight change on a small model and
# with a subject's own colours) are weak beside it.
PIXEL_SIGNALS = ("sample_burn", "leakage")


@dataclass(frozen=True)
class CheckpointVerdict:
    """One saved checkpoint's verdict: ``evidence`` lines (deciding first, the outweighed after), the dose it had
    reached, the picture measures of its samples (:func:`trainer.review.grid.measure_steps`)."""

    step: int
    label: str
    evidence: list[Msg]
    dose: float | None = None
    measures: dict[str, Any] = field(default_factory=dict)
    observations: tuple[Observation, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """``label`` ∈ LABELS; ``evidence``: messages, the deciding ones first; ``recommended_step``: the checkpoint to
    use (None when there is none worth using); ``summary``: one sentence with what to do."""

    label: str
    evidence: list[Msg]
    recommended_step: int | None
    summary: Msg
    observations: tuple[Observation, ...] = ()
    checkpoints: tuple[CheckpointVerdict, ...] = ()
    forecast: bool = False  # from the plan's dose alone, before any training
    weak_signals: tuple[str, ...] = ()  # detector signals that are weak evidence on this run's model

    def signals(self) -> dict[str, float]:
        """The knowledge-base signals the deciding evidence is, weighted by its strength (for the diagnosis)."""
        out: dict[str, float] = {}
        for o in self.observations:
            if o.signal and o.points_to == self.label:
                out[o.signal] = max(out.get(o.signal, 0.0), STRENGTH_WEIGHT[o.strength])
        return out

    def title(self) -> Msg:
        return LABEL_TEXT[self.label]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["title"] = LABEL_TEXT[self.label].to_json()
        return out


# ------------------------------------------------------------------------------------------------- plan


def dose_zone(dose: float, low: float, high: float) -> str:
    return "under" if dose < low else "over" if dose > high else "fit"


def _dose_observation(dose: float, low: float, high: float, strength: str, where: Msg) -> Observation:
    zone = dose_zone(dose, low, high)
    signal = {"under": "dose_under", "over": "dose_over"}.get(zone)
    return Observation("dose", zone, strength, msg("verdict.dose", where=where, dose=dose, side=Msg(f"verdict.side.{zone}"),
                                                   low=low, high=high), signal)


def plan_verdict(plan: Any) -> Verdict:
    """The verdict the dose forecasts before training (a :class:`~trainer.plan.steps.Plan` or its ``plan.json``): the
    same words the run's verdict uses, from the dose zone alone."""
    get: Callable[..., Any] = plan.get if isinstance(plan, dict) else lambda k, d=None: getattr(plan, k, d)
    dose, low, high = float(get("dose")), float(get("dose_low")), float(get("dose_high"))
    strength = "weak" if get("dose_note") else "moderate"  # prodigy: the lr is a multiplier
    obs = _dose_observation(dose, low, high, strength, msg("verdict.where_plan"))
    # an optimizer that sets its own step size: the dose forecasts nothing (label "none": the pictures will tell), so
    # no advice to move the lr or steps
    label = "none" if get("dose_note") else obs.points_to or "fit"
    advice = "verdict.forecast.own_step" if get("dose_note") else f"verdict.forecast.{label}"
    summary = msg("verdict.forecast", advice=Msg(advice))
    return Verdict(label, [obs.line()], None, summary, (obs,), forecast=True)


# -------------------------------------------------------------------------------------------- checkpoints


def _checkpoint_steps(run_dir: Path) -> list[int]:
    from trainer.run.contents import checkpoint_files

    files = checkpoint_files(run_dir)
    steps = sorted({c["step"] for c in files if c["weights"] == "live" and not c["final"]})
    if not steps:
        steps = sorted({c["step"] for c in files if c["weights"] == "live"})
    return steps


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _picture_observations(row: dict[str, Any], measured: bool, best_adherence: float | None) -> list[Observation]:
    """A judge's reading, as strong as that judge is trusted, where one applied; the pixel scores, moderate alone
    and weak beside a strong measure (``measured``: the model measures or a judge)."""
    from trainer.doctor.judges import judge_named
    from trainer.doctor.pictures import ADHERENCE_SLACK, BURN_LIMIT, LEAKAGE_LIMIT

    judge = judge_named(row.get("judge"))
    judged = judge is not None
    trust = judge.strength if judge is not None else "moderate"
    obs = []
    like, adh, leak, burn = row.get("likeness"), row.get("adherence"), row.get("leakage"), row.get("burn")
    if judged and like is not None:
        if like < LIKENESS_SHOWS:
            obs.append(Observation("pictures", "under", trust,
                                   msg("verdict.no_likeness", like=like, shows=LIKENESS_SHOWS), "low_likeness"))
        else:
            obs.append(Observation("pictures", "fit", trust, msg("verdict.likeness", like=like)))
    # a save that has not learned the subject follows the prompt no better: adherence drops mean overfitting
    # only once the subject is there (docs/training-guide.md, "Reading the saves": "even more alike, but poses
    # drift to the data's")
    shows = like is None or like >= LIKENESS_SHOWS
    if judged and shows and adh is not None and best_adherence is not None and adh < best_adherence - ADHERENCE_SLACK:
        obs.append(Observation("pictures", "over", trust, msg("verdict.low_adherence", adh=adh, best=best_adherence),
                               "low_adherence"))
    pixel = "weak" if measured and not judged else "moderate"
    if leak is not None:
        strength = trust if judged else pixel  # a judge reads what a picture shows; without one, pixels
        if leak > LEAKAGE_LIMIT:
            obs.append(Observation("pictures", "over", strength, msg("verdict.leakage", leak=leak, limit=LEAKAGE_LIMIT),
                                   "leakage"))
        elif judged:
            obs.append(Observation("pictures", "fit", "moderate", msg("verdict.no_leakage", leak=leak)))
    if burn is not None and burn > BURN_LIMIT:
        obs.append(Observation("pictures", "over", "weak" if measured else "moderate",
                               msg("verdict.burn", burn=burn, limit=BURN_LIMIT), "sample_burn"))
    return obs


def checkpoint_verdicts(run_dir: str | Path, config: Config | None = None) -> list[CheckpointVerdict]:
    """A verdict for every saved checkpoint (live weights; the final save when there is no other), oldest first."""
    from trainer.doctor.held_out import val_loss_by_step, validation_observation
    from trainer.doctor.model_measures import measures_by_step
    from trainer.doctor.pictures import dose_by_step, measure_steps
    from trainer.run.contents import load_run_config

    run_dir = Path(run_dir)
    config = config or load_run_config(run_dir)
    steps = _checkpoint_steps(run_dir)
    if not steps:
        return []
    measured = {r["step"]: r for r in measure_steps(run_dir)}
    model = measures_by_step(run_dir)
    vals = val_loss_by_step(run_dir)
    doses = dose_by_step(run_dir, config)
    # an optimizer that sets its own step size (a dose note) makes the lr a multiplier: the dose is not comparable;
    # and where the model or a judge measured a save, the dose only supports there (a save they did not read, the
    # measures off after the card's memory ran out, is judged as a run without them)
    own_step = sets_own_step(config)
    style = subject_of(config, workspace_presets(run_dir)) == "style"
    out = []
    best_adh: float | None = None  # the best adherence up to this save: overfitting is a fall from an earlier peak
    for step in steps:
        obs: list[Observation] = []
        strong = (measured.get(step, {}).get("likeness") is not None
                  or model.get(step, {}).get("trigger_hold") is not None)
        dose_strength = "weak" if strong or own_step else "moderate"
        mrow = {k: v for k, v in model.get(step, {}).items()
                if k in ("trigger_hold", "trigger_gain", "prior_drift", "memorisation", "masked", "trigger_share")}
        mrow["hold_before"] = max((m["trigger_hold"] for s, m in model.items()
                                   if 0 < s < step and m.get("trigger_hold") is not None), default=None)
        row = {**measured.get(step, {}), **mrow, **({"val_loss": vals[step]} if step in vals else {})} or None
        dose = doses.get(step)
        if row is not None:
            adh, like = row.get("adherence"), row.get("likeness")
            if adh is not None and (like is None or like >= LIKENESS_SHOWS):
                best_adh = adh if best_adh is None else max(best_adh, adh)
            obs += model_observations(row, dose is None or dose >= config.dose.fit_low, style)
            obs += _picture_observations(row, strong, best_adh)
        obs += [o for o in [validation_observation(step, vals)] if o is not None]
        if dose is not None:
            obs.append(_dose_observation(dose, config.dose.fit_low, config.dose.fit_high, dose_strength,
                                         msg("verdict.where_step", step=step)))
        label = decide(obs)
        lines = [o.line() for o in obs if o.points_to == label]
        lines += [o.line(outweighed=o.points_to is not None) for o in obs if o.points_to != label]
        out.append(CheckpointVerdict(step, label, lines, dose, dict(row or {}), tuple(obs)))
    return out


def _score(c: CheckpointVerdict) -> float:
    """How good a fit save is: a judge's likeness + adherence − leakage − burn (weak), else the model's trigger
    hold as the share of the way from its line to a full hold, less the prior drift against its limit."""
    m = c.measures
    if m.get("likeness") is not None:
        return ((m.get("likeness") or 0.0) + (m.get("adherence") or 0.0) - (m.get("leakage") or 0.0)
                - STRENGTH_WEIGHT["weak"] * (m.get("burn") or 0.0))
    return ((m.get("trigger_hold") or 0.0) - HOLD_SHOWS) / (1.0 - HOLD_SHOWS) - (m.get("prior_drift") or 0.0) / DRIFT_LIMIT


def _recommend(cvs: list[CheckpointVerdict], config: Config) -> int | None:
    from trainer.doctor.held_out import lowest_validation

    if not cvs:
        return None
    fits = lowest_validation([c for c in cvs if c.label == "fit"])
    if fits:
        if any(c.measures.get("likeness") is not None or c.measures.get("trigger_hold") is not None for c in fits):
            return max(fits, key=lambda c: (_score(c), -c.step)).step
        middle = math.sqrt(config.dose.fit_low * config.dose.fit_high)
        return min(fits, key=lambda c: (abs(math.log(max(c.dose or 1e-12, 1e-12) / middle)), -c.step)).step
    first_over = next((i for i, c in enumerate(cvs) if c.label == "over"), None)
    if first_over is None:
        return cvs[-1].step  # all under: the furthest along
    return cvs[first_over - 1].step if first_over > 0 else cvs[0].step  # the least pushed


# ------------------------------------------------------------------------------------------------- run


def weak_number_signals() -> tuple[str, ...]:
    """The signals of the numbers' detectors that are weak evidence (trends beside pictures or model measures)."""
    return tuple(s for d in detectors("numbers") if d.points_to is not None and d.strength == "weak" for s in d.signals)


def _finding_observations(findings: list[Any]) -> list[Observation]:
    """The findings whose detectors weigh in on the verdict, each pointing the way its detector says."""
    out = []
    for f in findings:
        signal = f.signal if hasattr(f, "signal") else f.get("signal")
        message = f.message if hasattr(f, "message") else f.get("message")
        d = detector_for(signal)
        if d is not None and d.points_to is not None and d.strength is not None:
            out.append(Observation(d.group, d.points_to, d.strength, message))
    return out


def run_findings(run_dir: Path, config: Config) -> list[Any]:
    """The detectors' findings on the run's events and numbers (the pictures are read by :func:`checkpoint_verdicts`)."""
    return collect(RunInputs.read(run_dir, config), "guard", "numbers", "progress")


def run_verdict(run_dir: str | Path, findings: list[Any] | None = None) -> Verdict:
    """The run's verdict: broken when the guard saw a non-finite value; else from its checkpoints (fit when one
    fits, with the one to use; under when all are under; else over); a run without checkpoints is judged on the
    dose it reached and its numbers. ``findings`` (the detectors', e.g. from ``diagnose``) saves reading them twice."""
    from trainer.doctor.pictures import dose_by_step
    from trainer.run.contents import load_run_config

    run_dir = Path(run_dir)
    config = load_run_config(run_dir)
    findings = run_findings(run_dir, config) if findings is None else findings
    run_obs = _finding_observations(findings)
    cvs = checkpoint_verdicts(run_dir, config)
    recommended = _recommend(cvs, config)
    broken = [o for o in run_obs if o.points_to == "broken"]
    if broken:
        label = "broken"
    elif cvs:
        labels = {c.label for c in cvs}
        label = "fit" if "fit" in labels else "under" if labels == {"under"} else "over"
    else:
        doses = dose_by_step(run_dir, config)
        if doses:
            last = max(doses)
            run_obs.append(_dose_observation(doses[last], config.dose.fit_low, config.dose.fit_high, "moderate",
                                             msg("verdict.where_reached", step=last)))
        label = decide(run_obs) if doses else "none"  # not a step trained: nothing to call fit or under
    by_step = {c.step: c for c in cvs}
    rec = by_step.get(recommended) if recommended is not None else None
    lines: list[Msg] = [o.line() for o in broken]
    if rec is not None:
        lines += [msg("verdict.at_step", step=rec.step, text=e) for e in rec.evidence]
    others = [c for c in cvs if c.step != recommended and c.label != label]
    for c in others:
        lines.append(msg("verdict.other_checkpoint", step=c.step, label=LABEL_TEXT[c.label], evidence=c.evidence[0]))
    lines += [o.line(outweighed=o.points_to not in (None, label)) for o in run_obs if o.points_to != "broken"]
    strong = any(c.measures.get("likeness") is not None or c.measures.get("trigger_hold") is not None for c in cvs)
    # where the pictures or the model were measured, the trends of the numbers are weak beside them
    # (docs/training-guide.md, "Reading the saves": judge by pictures, not by the loss), and so are the pixel
    # scores
    weak = (PIXEL_SIGNALS if strong else ()) + (weak_number_signals() if any(c.measures for c in cvs) else ())
    deciding = next((c for c in cvs if c.label == label), rec)  # the first save that shows the run's verdict
    observations = tuple(run_obs) + (rec.observations if rec else ()) + (
        deciding.observations if deciding is not None and deciding is not rec else ())
    summary = summary_of(label, recommended, cvs, broken, unfinished(findings), still_training(run_dir),
                         failure(findings), planned_steps(RunPaths(run_dir)), caption_suspect(findings),
                         captions_alike(findings))
    return Verdict(label, lines, recommended, summary, observations, tuple(cvs), weak_signals=weak)
