"""The one verdict (:mod:`trainer.doctor.verdict`) as Plan, Review and Troubleshoot show it: the same badge, the same
words, the evidence with its strength in words. Pure functions of a Verdict or its JSON (``diagnosis.json``)."""

from __future__ import annotations

import html
from typing import Any

from trainer.doctor.verdict import LABEL_TEXT, Verdict
from words import say

from .i18n import t

ICON = {"fit": "✅", "under": "🔵", "over": "🟠", "broken": "🔴", "none": "⚪"}


def _as_json(verdict: Verdict | dict[str, Any]) -> dict[str, Any]:
    return verdict.to_json() if isinstance(verdict, Verdict) else verdict


def badge(label: str, lang: str, forecast: bool = False) -> str:
    """"Verdict: fit" (or "Expected verdict: fit" before training), marked with the label for tests and styles."""
    if forecast and label == "none":  # nothing forecast: an optimizer that sets its own step
        words = t("verdict_plan_open", lang)
    else:
        words = t("verdict_plan" if forecast else "verdict_run", lang, label=say(LABEL_TEXT[label], lang))
    return f'<span class="ld-verdict ld-verdict-{label}" data-verdict="{label}">{ICON[label]} {html.escape(words)}</span>'


def verdict_markdown(verdict: Verdict | dict[str, Any], lang: str, evidence: int = 6) -> str:
    """Badge as a heading, the one-sentence summary, then up to ``evidence`` lines of what it rests on."""
    v = _as_json(verdict)
    lines = [f"### {badge(v['label'], lang, v.get('forecast', False))}", say(v["summary"], lang)]
    shown = v.get("evidence") or []
    if shown and evidence:
        lines.append(f"**{t('verdict_rests_on', lang)}**")
        lines.append("\n".join(f"- {say(e, lang)}" for e in shown[:evidence]))
    return "\n\n".join(lines)


def checkpoint_labels(verdict: Verdict | dict[str, Any] | None, lang: str) -> dict[int, str]:
    """step → the checkpoint's verdict in words, for grids and tables."""
    if verdict is None:
        return {}
    return {c["step"]: say(LABEL_TEXT[c["label"]], lang) for c in _as_json(verdict).get("checkpoints") or []}
