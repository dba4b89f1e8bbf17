"""The verdict's one-paragraph summary: what the run is, which save to use, what to do first (Review shows it
without the observation list, so it quotes what decided where that matters)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.message import Msg, msg

if TYPE_CHECKING:
    from trainer.doctor.evidence import Observation
    from trainer.doctor.verdict import CheckpointVerdict


def summary_of(label: str, rec: int | None, cvs: list[CheckpointVerdict], broken: list[Observation],
               stopped_early: Any = None, training: int | None = None, failed: Any = None, planned: float = 0,
               suspect: Any = None, alike: Any = None) -> Msg:
    """``suspect``: a scan's caption finding the run's end bore out (plan_findings.caption_suspect); an under-trained
    run's summary then names it, not "train longer": more steps on those captions teach the same thing. ``alike``:
    the finding that many pictures share one caption (plan_findings.captions_alike); a fit run's summary then says
    the model's measures read what those captions trained, and to look at the pictures first."""
    later = [c.step for c in cvs if rec is not None and c.step > rec and c.label == "over"]
    if label == "none":  # what stopped it, said here: Review shows no observation list
        return msg("verdict.summary.none", why=failed.message if failed else msg("verdict.no_step")) if training is None \
            else msg("verdict.summary.none_training")
    if label == "broken":
        salvage = msg("verdict.salvage", step=rec) if rec is not None else ""
        return msg("verdict.summary.broken", first=broken[0].text, salvage=salvage)
    if label == "fit" and alike is not None and rec is not None:
        return msg("verdict.summary.fit_captions_alike", step=rec, why=alike.message)
    if label == "fit":
        tail = msg("verdict.later_overfit", steps=", ".join(map(str, later))) if later else ""
        use = msg("verdict.use_step", step=rec) if rec is not None else ""
        return msg("verdict.summary.fit", use=use, tail=tail)
    if label == "under" and (stopped_early or failed) is not None:  # it has not finished: Continue (or mend what
        # stopped it) before any change; when the device's memory stopped it, a change that needs less comes first
        said = {None: "under_unfinished" if stopped_early is None or stopped_early.values["resume_step"] is not None
                else "under_restart", "run_out_of_memory": "under_out_of_memory", "run_failed": "under_failed"}
        step = (failed or stopped_early).values["step"]
        total = stopped_early.values["planned"] if stopped_early is not None else planned
        return msg(f"verdict.summary.{said[failed.signal if failed else None]}", step=step,
                   planned=total if isinstance(total, int) else "?", why=failed.message if failed else "")
    if label == "under" and training is not None and cvs:  # judged while it trains: not a reason to change anything
        return msg("verdict.summary.under_training", step=cvs[-1].step, planned=training)
    if label == "under":
        return _look_first(cvs, _under(rec, cvs, suspect))
    where = msg("verdict.least_pushed", step=rec) if rec is not None else ""
    masked = any(o.signal == "masked_drift" for c in cvs if c.label == "over" for o in c.observations)
    return msg("verdict.summary.over_masked" if masked else "verdict.summary.over", where=where)


def _under(rec: int | None, cvs: list[CheckpointVerdict], suspect: Any) -> Msg:
    last = msg("verdict.last_checkpoint", step=rec) if rec is not None else msg("verdict.the_run")
    if suspect is not None:
        return msg("verdict.summary.under_captions", last=last, why=suspect.message)
    # the last save's hold stopped growing while the dose rose: more steps or lr are not what it lacks (the mixed
    # sizes folder: 1.5x the steps drew less of the character, the rank doubled drew it; docs/doctor.md)
    stalled = bool(cvs) and any(o.signal == "trigger_hold_plateau" for o in cvs[-1].observations)
    return msg("verdict.summary.under_plateau" if stalled else "verdict.summary.under", last=last)


def _look_first(cvs: list[CheckpointVerdict], said: Msg) -> Msg:
    """An under-trained run's summary; where its last save's trigger hold sits in the band where the pictures decide
    and no judge read them, first to look at that save's pictures, the summary being what to do if they do not show
    the subject: on the demo world's pictures in plain folders 18 of the 38 saves read under there showed the subject
    (an everyday trigger, pictures of mixed sizes on three training seeds each, a step-400 save), 5 of the 8 that
    were a run's last (scripts/doctor_calibration.py --failure-seeds 42 1 2)."""
    from trainer.doctor.model_lines import HOLD_EDGE, HOLD_SHOWS

    if not cvs:
        return said
    last = cvs[-1]
    hold = last.measures.get("trigger_hold")
    if hold is None or not HOLD_EDGE <= hold < HOLD_SHOWS or last.measures.get("likeness") is not None:
        return said
    return msg("verdict.summary.look_first", text=said, step=last.step, hold=hold)
