"""``diagnose(run_dir)``: what was observed, the likely causes ranked by that evidence, prescriptions in order.

Reads only the run folder (config, plan, metrics, events, samples, journal), so it works on a finished, a
stopped or a crashed run, and on runs from another machine. Writes ``diagnosis.json``.

The run's verdict (:mod:`trainer.doctor.verdict`) comes with it and orders it: a signal that is weak on the run's model
counts as weak, and a cause that points away from the verdict ("overtrained" on a run judged fit) is kept as a
lesser, weighed observation after the causes that agree, never as the top cause.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from trainer.config.changes import setting_changes
from trainer.config.schema import Config, diff_configs, from_dict, read_toml
from trainer.doctor.detectors import NONFINITE_WEIGHT, Finding
from trainer.doctor.outcome import change_outcome, saved_diagnosis
from trainer.doctor.registry import RunInputs, collect, detector_for
from trainer.doctor.risks import LR_FIRST_WEIGHT
from trainer.errors import UserError
from trainer.io import atomic_write_json, read_jsonl
from trainer.message import Msg, msg
from trainer.run.events import StepRow, value
from trainer.run.rundir import RunPaths, run_status, workspace_presets
from trainer.run.worded import worded

LEVEL_WEIGHT = {"error": 1.0, "warning": 0.6, "info": 0.3}  # a finding's weight, unless its detector names one:
__all__ = ["LR_FIRST_WEIGHT", "NONFINITE_WEIGHT"]  # the non-finite failure's and the far lr's (registry.detector)
WEAK_SIGNAL_FACTOR = 0.25  # a signal that is weak evidence on this run's model (trainer.doctor.verdict.weak_signals)
CAUSE_STRENGTH = ((1.0, "strong"), (0.5, "moderate"), (0.0, "weak"))  # a cause's score, in words


def _load_config(paths: RunPaths) -> Config:
    return from_dict(read_toml(paths.config), origin=str(paths.config))


def bf16_available(config: Config | None) -> bool:
    """Whether a run of ``config`` would train in bf16 on this machine: the rule ``decide_precision`` applies
    (a GPU that only emulates bf16 does not count), so the doctor never prescribes what training refuses."""
    from trainer.models.precision import bf16_supported, resolve_device

    try:
        device = resolve_device(config.train.device if config is not None else "auto")
    except UserError:  # the config names a device this machine lacks
        return False
    return bf16_supported(device)


def collect_findings(run_dir: Path, config: Config | None = None, with_samples: bool = True) -> list[Finding]:
    """Every registered detector's findings on the run folder (the pictures' only ``with_samples``)."""
    paths = RunPaths(Path(run_dir))
    run = RunInputs.read(paths.root, config or _load_config(paths))
    # what stopped the run (the guard, the device's memory) and how far it got are read first
    groups = ("guard", "progress", "numbers", *(("pictures",) if with_samples else ()), "model", "settings", "base")
    return collect(run, *groups)


def finding_weight(signal: str, level: str) -> float:
    """How much a finding counts towards the causes: its detector's weight (for its level, where the detector
    weighs levels apart), else its level's."""
    d = detector_for(signal)
    weight = None if d is None else d.weight
    if isinstance(weight, tuple):
        weight = dict(weight).get(level)
    return LEVEL_WEIGHT[level] if weight is None else weight


def earlier_checkpoint(verdict) -> int | None:
    """The checkpoint "use an earlier checkpoint" means for this run (a Verdict or its JSON): the verdict's, when
    a later one exists and it is a fit save; None when the run has no earlier checkpoint worth using."""
    v = verdict if isinstance(verdict, dict) else verdict.to_json()
    steps = [c["step"] for c in v.get("checkpoints") or []]
    rec = v.get("recommended_step")
    fit = {c["step"] for c in v.get("checkpoints") or [] if c["label"] == "fit"}
    # an earlier save that is itself over-trained fixes nothing: then the dose has to come down
    return rec if rec is not None and steps and rec < max(steps) and rec in fit else None


def change_refusal(config: Config, change: Any, preset_dirs: list[Path] | None = None) -> str | None:
    """Why this run cannot take ``change`` (a prescription's one config change): "out_of_range" (the new value
    is refused), "wrong_way" (it would move the setting against what the prescription means), "already" (the
    config is so already), "needs_bf16" (a device without bf16); None when it can. ``preset_dirs``: where the
    run's own presets are (:func:`trainer.run.rundir.workspace_presets`), for a change back to its preset."""
    from trainer.doctor.kb import apply_change, moves_as_meant

    try:
        if not moves_as_meant(config, change, preset_dirs):
            return "wrong_way"
        if not diff_configs(config, apply_change(config, change, preset_dirs)):
            return "already"
    except (UserError, ValueError):
        return "out_of_range"
    if "bf16_supported" in change.requires and not bf16_available(config):
        return "needs_bf16"
    return None


def _prescriptions(kb, ranked, config: Config, verdict=None, lesser: frozenset[str] = frozenset(),
                   continuable: bool = True, preset_dirs: list[Path] | None = None,
                   made: dict[str, list] | None = None) -> list[dict[str, Any]]:
    """Every ranked cause's prescriptions, in order, each with its change and whether this run can take it.
    ``made``: the settings this run changed from the run it was started from (its journal): a prescription that
    changes one of them says so (doubling the rank of a run whose rank was doubled: its hold can stay where it was
    while its pictures get better, so the pictures are what tell)."""
    from trainer.doctor.changes import effective_key
    from trainer.doctor.kb import apply_change, describe_change

    out, seen = [], set()
    for rc in ranked:
        for p in kb.prescriptions_for(rc.cause.id):
            if p.id in seen:
                continue
            seen.add(p.id)
            change = None
            applicable = True
            detail: Msg | dict[str, str] = {"en": p.text("detail", "en"), "ko": p.text("detail", "ko")}
            if already_followed(p, config):
                applicable = False  # the run already does it (prior images on a run that had them)
            if p.id in ("continue_run", "restart_run"):  # Continue where a checkpoint is there to go on from
                applicable = continuable == (p.id == "continue_run")
            if p.id == "earlier_checkpoint" and verdict is not None:
                step = earlier_checkpoint(verdict)
                applicable = step is not None  # never a checkpoint the run does not have
                if step is not None:
                    detail = msg("diagnosis.at_step", step=step, text=detail)
            key = effective_key(config, p.change.key) if p.change is not None else None  # epochs: max_steps if set
            if made and key in made:
                before, after = made[key]
                detail = msg("diagnosis.made_from_parent", key=key, old=before, new=after, text=detail)
            if p.change is not None:
                refusal = change_refusal(config, p.change, preset_dirs)
                applicable = applicable and refusal is None
                # the change it would make (none when it cannot be made: out of range, the wrong way, already so)
                diff = (diff_configs(config, apply_change(config, p.change, preset_dirs))
                        if refusal in (None, "needs_bf16") else {})
                change = {
                    "key": p.change.key, "op": p.change.op, "value": p.change.value,
                    "requires": list(p.change.requires),
                    "diff": {k: list(v) for k, v in diff.items()},
                    "describe": describe_change(p.change, config, preset_dirs) if diff else {"en": "", "ko": ""},
                }
            out.append({
                "id": p.id, "for_cause": rc.cause.id,
                "title": {"en": p.text("title", "en"), "ko": p.text("title", "ko")},
                "detail": detail, "change": change, "applicable": applicable,
                "lesser": rc.cause.id in lesser, "step": p.step,
            })
    return out


def already_followed(prescription: Any, config: Config | None) -> bool:
    """Advice the run follows already: its ``unless_set`` setting is set ("add prior images" to a run that had
    them)."""
    return config is not None and bool(prescription.unless_set) and bool(_setting(config, prescription.unless_set))


def _setting(config: Config, key: str) -> Any:
    section, name = key.split(".", 1)
    return getattr(getattr(config, section), name)


def _loss_summary(metrics: Path) -> dict[str, Any]:
    rows = [StepRow.parse(r) for r in read_jsonl(metrics)]
    measured = [value(r.loss) for r in rows if not r.skipped]
    losses = [v for v in measured if v is not None and math.isfinite(v)]
    tail = losses[-max(1, len(losses) // 4) :] if losses else []
    return {"steps": len(rows), "final_loss_mean": statistics.fmean(tail) if tail else None,
            "nonfinite_rows": sum(1 for r in rows if r.nonfinite)}


def compare_with_parent(paths: RunPaths, findings: list[Finding], verdict: Any = None) -> dict[str, Any] | None:
    """This run against the run it was started from (its journal's parent): the settings changed, the findings
    resolved, new and still there, the loss; with this run's ``verdict``, also ``outcome``: what the change did at
    the save each verdict recommends (:mod:`trainer.doctor.outcome`). None without a parent to read."""
    if not paths.journal.is_file():
        return None
    journal = json.loads(paths.journal.read_text())
    parent = journal.get("parent")
    if not parent or not RunPaths(Path(parent)).config.is_file():
        return None
    ppaths = RunPaths(Path(parent))
    saved = saved_diagnosis(ppaths)
    # the parent's findings as its own diagnosis read them, else read now as a diagnosis reads them (every group, the
    # pictures' too) and once: the sets compare with this run's, and its verdict is judged from the same findings
    if saved is not None:
        read, parent_findings = None, {o["signal"] for o in saved["observed"] if isinstance(o, dict) and "signal" in o}
    else:
        read = collect_findings(ppaths.root)
        parent_findings = {f.signal for f in read}
    mine = {f.signal for f in findings}
    changes = setting_changes(_load_config(ppaths), _load_config(paths))
    return {
        "parent": parent,
        "changes": {k: list(v) for k, v in changes.items()},
        "one_change": len(changes) == 1,
        "parent_status": run_status(ppaths.root).get("status"),
        "status": run_status(paths.root).get("status"),
        "resolved": sorted(parent_findings - mine),
        "new": sorted(mine - parent_findings),
        "still": sorted(parent_findings & mine),
        "loss": {"parent": _loss_summary(ppaths.metrics), "this": _loss_summary(paths.metrics)},
        "outcome": None if verdict is None else _outcome(ppaths, verdict, saved["verdict"] if saved else None, read),
    }


def _outcome(ppaths: RunPaths, verdict: Any, before: dict[str, Any] | None,
             findings: list[Finding] | None) -> dict[str, Any] | None:
    """What the change did: the parent's verdict from its own diagnosis (``before``), else judged now from its
    ``findings`` as this run is (a parent folder that cannot be judged costs this run nothing)."""
    from trainer.doctor.verdict import run_verdict

    if before is None:
        try:
            before = run_verdict(ppaths.root, findings=findings).to_json()
        except (OSError, ValueError, UserError):
            before = None
    return change_outcome(before, verdict.to_json())


def diagnose(run_dir: str | Path, write: bool = True) -> dict[str, Any]:
    """Findings, ranked causes and prescriptions for a run folder; also written to ``diagnosis.json``."""
    from trainer.doctor.kb import load_kb

    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(msg("error.run.not_a_run", run_dir=run_dir))
    config = _load_config(paths)
    findings = collect_findings(paths.root, config)
    from trainer.doctor.progress import continuable
    from trainer.doctor.symptoms import symptom_lean
    from trainer.doctor.verdict import LABEL_TEXT, run_verdict

    verdict = run_verdict(paths.root, findings=findings)
    parent = compare_with_parent(paths, findings, verdict)
    status = run_status(paths.root)
    kb = load_kb()
    signals: dict[str, float] = {}
    for f in findings:
        if f.signal in kb.signals:
            # A non-finite failure outranks any number of softer findings (it is what stopped the run), and a far lr
            # what it caused: their detectors' weights
            weight = finding_weight(f.signal, f.level)
            if f.signal in verdict.weak_signals:
                weight *= WEAK_SIGNAL_FACTOR
            signals[f.signal] = max(signals.get(f.signal, 0.0), weight)
    for signal, weight in verdict.signals().items():  # what the pictures showed, as the verdict weighed it
        if signal in kb.signals:
            signals[signal] = max(signals.get(signal, 0.0), weight)
    ranked = kb.rank_causes(signals, config) if signals else []
    # causes that point away from the verdict go after those that agree with it, as lesser observations: by their
    # own lean, or because every symptom that brought them up points away from it (caption bias raised only by
    # "samples melt late" on a fit run)
    leans = {sid: symptom_lean(sid, config) for sid in {sym for rc in ranked for _, sym in rc.evidence}}

    def away(lean: str | None) -> bool:
        return lean is not None and lean != verdict.label

    lesser = frozenset(rc.cause.id for rc in ranked if (rc.cause.leans and verdict.label not in rc.cause.leans)
                       or all(away(leans[sym]) for _, sym in rc.evidence))
    ranked = [rc for rc in ranked if rc.cause.id not in lesser] + [rc for rc in ranked if rc.cause.id in lesser]
    why_lesser = msg("diagnosis.why_lesser_none") if verdict.label == "none" else \
        msg("diagnosis.why_lesser", label=LABEL_TEXT[verdict.label])
    result = {
        "run_dir": str(paths.root),
        "status": status.get("status"),
        "resume_step": status.get("resume_step"),  # an interrupted or failed run's newest checkpoint
        "verdict": verdict.to_json(),
        "observed": [{**f.to_json(), "weak": f.signal in verdict.weak_signals} for f in findings],
        "causes": [
            {"id": rc.cause.id, "score": round(rc.score, 4), "strength": cause_strength(rc.score),
             "lesser": rc.cause.id in lesser, "why_lesser": why_lesser if rc.cause.id in lesser else None,
             "title": {"en": rc.cause.text("title", "en"), "ko": rc.cause.text("title", "ko")},
             "explanation": {"en": rc.cause.text("explanation", "en"), "ko": rc.cause.text("explanation", "ko")},
             "evidence": [list(e) for e in rc.evidence]}
            for rc in ranked
        ],
        "prescriptions": _prescriptions(kb, ranked, config, verdict, lesser, continuable(findings),
                                        workspace_presets(paths.root), parent["changes"] if parent else None),
        "parent": parent,
        "healthy": not any(f.level in ("warning", "error") for f in findings),
    }
    result = worded(result)  # what diagnosis.json holds, messages worded in both languages
    if write:
        atomic_write_json(paths.diagnosis, result)
    return result


def cause_strength(score: float) -> str:
    """A cause's ranking score in words (strong / moderate / weak evidence): nobody can read "1.70"."""
    return next(word for floor, word in CAUSE_STRENGTH if score >= floor)


def alert_prescription(run_dir: str | Path | None, signal: str, lang: str = "en") -> dict[str, Any] | None:
    """The first prescription for a guard alert while the run's diagnosis is not written yet, weighed as
    :func:`diagnose` weighs it: an lr a hundred times the preset's comes first (back to the preset's lr, not half
    of it), and a change this config cannot make, or only the wrong way, is skipped. ``{title, detail, change}``:
    the title and detail in ``lang``, the change a message ("" for none); None when nothing applies."""
    from trainer.doctor.kb import apply_change, describe_change, load_kb, moves_as_meant
    from trainer.doctor.risks import lr_far_finding

    kb = load_kb()
    paths = RunPaths(Path(run_dir)) if run_dir else None
    config = _load_config(paths) if paths is not None and paths.config.is_file() else None
    own = workspace_presets(paths.root) if paths is not None else None
    signals = {signal: finding_weight(signal, "warning")}
    lr_far = lr_far_finding(config, own) if config is not None else None
    if lr_far is not None:
        signals[lr_far.signal] = finding_weight(lr_far.signal, lr_far.level)
    for rc in kb.rank_causes(signals, config):
        for p in kb.prescriptions_for(rc.cause.id):
            change: Msg | str = ""
            if already_followed(p, config):
                continue
            if p.change is not None and config is not None:
                if "bf16_supported" in p.change.requires and not bf16_available(config):
                    continue
                try:
                    if (not diff_configs(config, apply_change(config, p.change, own))
                            or not moves_as_meant(config, p.change, own)):
                        continue
                except (UserError, ValueError):
                    continue
                change = describe_change(p.change, config, own)
            elif p.change is not None:
                change = describe_change(p.change)
            return {"title": p.text("title", lang), "detail": p.text("detail", lang), "change": change}
    return None
