"""What a change did: a run against the run it was started from (its journal's parent), at the save each one's
verdict recommends. Where a picture judge read both saves its likeness says whether the pictures got better; the
model measures alone cannot (the mixed-sizes folder's rank doubled: its trigger hold fell from 0.709 to 0.694 while
its pictures' likeness rose from 0.46 to 0.59, docs/doctor.md), so then the two runs' pictures side by side are
what tell, and the comparison says so."""

from __future__ import annotations

import json
from typing import Any

from trainer.doctor.evidence import LABEL_TEXT
from trainer.message import msg
from trainer.run.rundir import RunPaths

# A judge's likeness this far apart at the two recommended saves: the change moved the pictures. A reading on a few
# pictures a prompt moves from one draw of them to another, so a smaller step is not told apart from that.
LIKENESS_MOVES = 0.05


def saved_diagnosis(paths: RunPaths) -> dict[str, Any] | None:
    """The run's own diagnosis (its ``diagnosis.json``) where it holds a verdict and the findings it observed; None
    where there is none to read."""
    try:
        saved = json.loads(paths.diagnosis.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(saved, dict) and isinstance(saved.get("verdict"), dict) and isinstance(saved.get("observed"), list)
    return saved if ok else None


def at_recommended(verdict: dict[str, Any]) -> dict[str, Any]:
    """The verdict's label and, at the save it recommends (its last where it names none), that save's step, trigger
    hold, prior drift and a judge's likeness (None where not measured)."""
    saves = [c for c in verdict.get("checkpoints") or [] if isinstance(c, dict) and "step" in c]
    rec = verdict.get("recommended_step")
    save = next((c for c in saves if c["step"] == rec), saves[-1] if saves else {})
    measures = save.get("measures") or {}
    return {"label": verdict.get("label"), "step": save.get("step"),
            **{k: measures.get(k) for k in ("trigger_hold", "prior_drift", "likeness")}}


def change_outcome(parent: dict[str, Any] | None, this: dict[str, Any]) -> dict[str, Any] | None:
    """``parent``'s and ``this``'s verdicts (as :meth:`RunVerdict.to_json` writes them) side by side at their
    recommended saves, and ``said``: what the change did by a judge's likeness where one read both saves, else each
    run's verdict and trigger hold and that the pictures decide. None without the parent's verdict."""
    if not parent or parent.get("label") not in LABEL_TEXT or this.get("label") not in LABEL_TEXT:
        return None
    a, b = at_recommended(parent), at_recommended(this)
    common = {"old_label": LABEL_TEXT[a["label"]], "new_label": LABEL_TEXT[b["label"]],
              "old_step": a["step"] if a["step"] is not None else "—", "new_step": b["step"] if b["step"] is not None else "—"}
    if a["likeness"] is not None and b["likeness"] is not None:
        moved = b["likeness"] - a["likeness"]
        how = "better" if moved >= LIKENESS_MOVES else "worse" if moved <= -LIKENESS_MOVES else "same"
        said = msg(f"diagnosis.outcome_judged_{how}", old=a["likeness"], new=b["likeness"], **common)
    else:
        held = {k: f"{v:.3f}" if v is not None else "—" for k, v in (("old_hold", a["trigger_hold"]),
                                                                     ("new_hold", b["trigger_hold"]))}
        said = msg("diagnosis.outcome_unjudged", **held, **common)
    return {"parent": a, "this": b, "said": said}
