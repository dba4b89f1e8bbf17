"""Findings read from the run's plan (``plan.json``): the dose against the preset's zone, sample prompts that copy
a training caption, and pictures the scan found twice. Registered with the "numbers" detectors, so they are raised
live and in the diagnosis alike.

The dose is a forecast from the settings. Once the run's own model has read its saves
(:mod:`trainer.doctor.model_measures`), those readings decide: a dose past the zone whose saves none read
over-trained, or one under it whose saves read the subject, is said as information, not as a warning (a constant
lr doubles the cosine's dose, batch 2 the steps; scripts/doctor_settings.py trains both)."""

from __future__ import annotations

import functools
from pathlib import Path

from trainer.doctor.registry import Finding, detector
from trainer.message import chained, msg

# A finding of the scan that the run's end bore out (every save read under, :func:`_under_at_end`): it outweighs the
# causes every under-trained run shares (too little dose 1.0, the LoRA's room 1.0 where the hold stopped growing), as
# what sets this run apart; said as information it weighs as any.
BORNE_OUT = {"warning": 1.2}
ALL_ALIKE = 0.9  # a caption shared by this share of the pictures or more: the captions name nothing that changes
# The scan's caption findings that a run's end can bear out (:func:`_under_at_end`), as :func:`_caption_suspect`
# registers them: the first one said as a warning is what the verdict's summary names for an under-trained run
# instead of "train longer" (verdict_summary.summary_of).
CAPTION_SUSPECTS: list[str] = []


def _caption_suspect(signal: str, weight: dict[str, float] | None = None):
    """Register a detector of one of the scan's caption findings whose level the run's end decides, as a
    :data:`CAPTION_SUSPECTS`."""
    CAPTION_SUSPECTS.append(signal)
    return detector(signal, reads=("plan", "run_dir", "ended"), weight=weight)


def _model_reading(run_dir: Path | None, ended: bool) -> tuple[frozenset[str], bool] | None:
    """What the run's own model reads at each measured step after step 0, and whether it warns of over-training (a
    prior drift that stayed past its line, or memorisation: :func:`trainer.doctor.model_measures.over_warnings`).
    None: the run does not measure its saves, so the dose is all there is; an empty set: measured from step 0, no
    save read yet. ``ended``: the run has stopped (its last save's drift then counts alone). The measures file is read
    once for the findings that ask of one version of it (the dose's and the scan's caption findings, live and in
    the diagnosis)."""
    if run_dir is None:
        return None
    from trainer.run.rundir import RunPaths

    try:
        st = RunPaths(run_dir).measures.stat()
    except OSError:
        return None
    return _reading_of(str(run_dir), (st.st_mtime_ns, st.st_size), ended)


@functools.lru_cache(maxsize=16)
def _reading_of(run_dir: str, version: tuple[int, int], ended: bool) -> tuple[frozenset[str], bool] | None:
    """:func:`_model_reading` of one version (modified time, size) of a run's measures file."""
    from trainer.doctor.evidence import decide
    from trainer.doctor.model_lines import model_observations
    from trainer.doctor.model_measures import measures_by_step, over_warnings

    measured = measures_by_step(run_dir)
    if not measured:
        return None
    labels = frozenset(decide(model_observations(m)) for s, m in measured.items()
                       if s > 0 and m.get("trigger_hold") is not None)
    return labels, bool(labels) and bool(over_warnings(measured, ended))


@detector(("dose_over", "dose_under"), reads=("plan", "run_dir", "ended"))
def dose_finding(plan: dict, run_dir: Path | None = None, ended: bool = True) -> Finding | None:
    """The dose outside the preset's zone; nothing where the optimizer sets its own step size (the plan's dose note
    says so: Prodigy's lr is a multiplier, its dose not comparable with the zone's). Where the run measures its own
    saves, they decide how it is said (the module's docstring)."""
    zone = plan.get("dose_zone")
    if zone not in ("under", "over") or plan.get("dose_note"):
        return None
    dose, lo, hi = plan["dose"], plan["dose_low"], plan["dose_high"]
    values = {"dose": dose, "low": lo, "high": hi}
    reading = _model_reading(run_dir, ended)
    level, said = "warning" if zone == "over" else "info", f"finding.dose_{zone}"
    if reading and not reading[0]:  # measured from step 0; no save read yet
        level, said = "info", f"finding.dose_{zone}_pending"
    elif reading and not (reading[1] if zone == "over" else reading[0] == {"under"}):  # the saves read otherwise
        level, said = "info", f"finding.dose_{zone}_measured"
    # else: no measures (the forecast is the reading), or the saves read what the dose foretold
    if zone == "over":
        return Finding("dose_over", level, msg(said, **values), [], values)
    return Finding("dose_under", level, msg(said, **values), [], values)


@detector("sample_prompt_seen", reads=("plan",))
def sample_prompt_finding(plan: dict) -> Finding | None:
    """The plan's sample prompts that copy a training caption (see :func:`trainer.plan.steps.sample_prompt_warnings`)."""
    copies = plan.get("sample_warnings") or []
    if not copies:
        return None
    return Finding("sample_prompt_seen", "warning",
                   functools.reduce(lambda a, b: msg("joined", first=a, rest=b), (c["message"] for c in copies)),
                   [], {"prompts": [{k: c[k] for k in ("index", "prompt", "files", "matches")} for c in copies]})


@detector("near_copy", reads=("plan",))
def near_copy_finding(plan: dict) -> Finding | None:
    """Pictures the scan found to be another picture resized, re-encoded or recoloured (:mod:`trainer.data.near_copies`):
    each is trained on twice as often as the rest."""
    copies = plan.get("near_copies") or []
    if not copies:
        return None
    named = [msg("finding.near_copy.one", file=c["file"], original=c["original"]) for c in copies[:5]]
    said = msg("finding.near_copy", count=len(copies), pictures=chained("error.and", named))
    return Finding("near_copy", "warning", said, [], {"copies": copies})


@_caption_suspect("caption_everywhere")
def caption_everywhere_finding(plan: dict, run_dir: Path | None = None, ended: bool = True) -> Finding | None:
    """A phrase in nearly every caption (the scan's caption doctor found it): what it says is learnt by its words,
    not by the trigger. A warning where the run has ended and its own model read every save under (the trigger alone
    does not bring the subject: a look written in every caption is the first suspect), else information: the scan
    said it, a class word or a style tag in every caption is common and harmless, and while the run trains its
    first saves read under on a healthy run too (the character's captions that write its look: step 400 under, then
    fit)."""
    phrases = plan.get("captions_everywhere") or []
    if not phrases:
        return None
    named = chained("error.and", [msg("finding.caption_everywhere.one", **p) for p in phrases[:3]])
    return Finding("caption_everywhere", _under_at_end(run_dir, ended), msg("finding.caption_everywhere", phrases=named),
                   [], {"phrases": phrases})


@_caption_suspect("trigger_common_word", BORNE_OUT)
def trigger_common_finding(plan: dict, run_dir: Path | None = None, ended: bool = True) -> Finding | None:
    """A trigger that is an everyday word the base model already draws (the scan's caption doctor found it): every
    prompt that uses the word in its own sense now draws the subject, and the base's meaning of it pulls against
    what the LoRA learns. Information, and a warning where the run ended with every save read under (as
    :func:`caption_everywhere_finding`): on the demo character's pictures with the trigger "star" the trigger
    alone denoised the subject less well at every save than "zxc" did, and the saves read under at holds of
    0.744-0.752 where its pictures showed the character (likeness 0.62-0.65, the rare trigger's 0.69-0.84)."""
    trigger = plan.get("trigger_common")
    if not trigger:
        return None
    return Finding("trigger_common_word", _under_at_end(run_dir, ended),
                   msg("finding.trigger_common_word", trigger=trigger), [], {"trigger": trigger})


@_caption_suspect("trigger_not_first", BORNE_OUT)
def trigger_not_first_finding(plan: dict, run_dir: Path | None = None, ended: bool = True) -> Finding | None:
    """Captions that write the trigger after the tags kept in place while the rest are shuffled or dropped (the
    scan's caption doctor found them): the trigger moves and is sometimes left out, and the tag that always stays
    first learns the subject. Said as :func:`caption_everywhere_finding` is: on the demo character's pictures with
    the trigger written last ("wearing a red hat, on grass, bottom, small, zxc"; the preset shuffles, drops a quarter
    of the tags and keeps the first) every save read under, as its pictures did (likeness 0.01-0.21), the trigger
    adding next to nothing to a caption (gain 0.006), and the diagnosis's first cause was "double the rank"."""
    said = plan.get("trigger_not_first")
    if not said:
        return None
    return Finding("trigger_not_first", _under_at_end(run_dir, ended), msg("finding.trigger_not_first", **said), [],
                   dict(said))


@detector("captions_identical", reads=("plan",))
def captions_identical_finding(plan: dict) -> Finding | None:
    """Nearly every picture sharing one caption (:data:`ALL_ALIKE`; the scan's caption doctor warned of it), a
    warning: what differs between them (the place, the size, the pose) has no word, so the trigger learns it with
    the subject, and the trigger hold, measured with the trigger alone, reads what these captions trained. On the
    demo character's pictures with every caption "zxc" the model read fit from step 800 (holds 0.78-0.80) where the
    pictures did not show the character (likeness 0.14-0.16: the trigger drew the data's places and shapes). A
    smaller group sharing one caption is the scan's to say (the Dataset step): the other captions still name what
    changes."""
    said = plan.get("captions_identical")
    if not said or said["n"] < ALL_ALIKE * said["of"]:
        return None
    return Finding("captions_identical", "warning", msg("finding.captions_identical", n=said["n"],
                                                        caption=said["caption"]), [], dict(said))


def captions_alike(findings: list[Finding]) -> Finding | None:
    """The finding that many pictures share one caption, if the run has it."""
    return next((f for f in findings if f.signal == "captions_identical"), None)


def caption_suspect(findings: list[Finding]) -> Finding | None:
    """The first of ``findings`` that is a scan's caption finding the run's end bore out (a warning), if any."""
    return next((f for f in findings if f.signal in CAPTION_SUSPECTS and f.level == "warning"), None)


def _under_at_end(run_dir: Path | None, ended: bool) -> str:
    """A finding's level where it explains a run that learnt too little: a warning once the run ended with every
    save its own model read under, else information (while it trains, early saves read under on a healthy run)."""
    reading = _model_reading(run_dir, ended)
    return "warning" if ended and reading and reading[0] == {"under"} else "info"
