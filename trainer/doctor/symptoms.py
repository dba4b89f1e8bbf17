"""Reading a symptom the user picked in the light of the run's verdict: which of its causes agree with the
evidence, and what the symptom more likely means when the evidence points the other way."""

from __future__ import annotations

from typing import Any

from trainer.config.schema import Config
from trainer.doctor.verdict import LABEL_TEXT, Verdict
from trainer.message import Msg, msg


def _json(verdict: Verdict | dict[str, Any]) -> dict[str, Any]:
    return verdict.to_json() if isinstance(verdict, Verdict) else verdict


def symptom_causes(symptom_id: str, verdict: Verdict | dict[str, Any] | None, config: Config | None = None):
    """A symptom's causes as (cause, lesser): those that agree with the run's verdict first in the knowledge
    base's order, then those that point away from it ("undertrained" for "not alike" on a run judged over)."""
    from trainer.doctor.kb import load_kb

    causes = load_kb().causes_for(symptom_id, config)
    label = None if verdict is None or _json(verdict).get("forecast") else _json(verdict)["label"]
    marked = [(c, bool(label and c.leans and label not in c.leans)) for c in causes]
    return [m for m in marked if not m[1]] + [m for m in marked if m[1]]


def symptom_lean(symptom_id: str, config: Config | None = None) -> str | None:
    """The verdict a symptom points to by itself: its most likely cause's, when that cause points to one."""
    from trainer.doctor.kb import load_kb

    causes = load_kb().causes_for(symptom_id, config)
    return causes[0].leans[0] if causes and len(causes[0].leans) == 1 else None


def symptom_reading(symptom_id: str, verdict: Verdict | dict[str, Any] | None,
                    config: Config | None = None) -> Msg | None:
    """How to read a symptom the user picked when the run's evidence says otherwise: None when they agree (or the
    symptom points nowhere in particular), else one paragraph saying what it more likely means and why."""
    from trainer.doctor.kb import load_kb

    lean = symptom_lean(symptom_id, config)
    if verdict is None or lean is None:
        return None
    v = _json(verdict)
    if v.get("forecast") or lean == v["label"]:
        return None
    title = {lang: load_kb().symptom(symptom_id).text("title", lang) for lang in ("en", "ko")}
    why = v["evidence"][0] if v.get("evidence") else ""
    rec = v.get("recommended_step")
    use = msg("verdict.check_step", step=rec) if rec is not None and v["label"] in ("fit", "over") else ""
    return msg("verdict.reading", label=LABEL_TEXT[v["label"]], why=why, title=title,
               meaning=Msg(f"verdict.meaning.{v['label']}"), use=use)
