"""The mapping report of a kohya import or export: every source key with what became of it, and why, as
messages; worded by the caller (``words.say``) as text (the CLI), Markdown (the wizard) or JSON."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from trainer.kohya.mapping import is_neutral
from trainer.message import Msg, msg

Say = Callable[[Any, str], str]
"""``words.say``: a message (a :class:`Msg`, or one already worded as ``{"en": …, "ko": …}``) in a language."""

KINDS = ("mapped", "changed", "unsupported", "unknown")
HEADINGS = {"mapped": msg("kohya.kind.mapped"), "changed": msg("kohya.kind.changed"),
            "unsupported": msg("kohya.kind.unsupported"), "unknown": msg("kohya.kind.unknown")}
LANGS = ("en", "ko")
"""The languages the JSON report words each message in."""


@dataclass
class Report:
    source: str
    kind: str
    """"gui" (kohya_ss JSON), "sd" (sd-scripts TOML) or "export" (ours → sd-scripts)."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    """One a source key: kind, key, value, ours, our_value and note (a :class:`Msg`, or None)."""
    defaulted: list[str] = field(default_factory=list)
    """sd-scripts keys its TOML left out, read at sd-scripts' default."""
    steps: dict[str, Any] = field(default_factory=dict)
    """kohya's step count, ours, whether they match, and each cause of a difference (messages); or only a
    ``note`` when ours could not be planned."""

    def _add(self, kind: str, key: str, value: Any, ours: str, our_value: Any, note: Msg | None) -> None:
        self.entries.append({"kind": kind, "key": key, "value": value, "ours": ours, "our_value": our_value,
                             "note": note})

    def mapped(self, key: str, value: Any, ours: str, our_value: Any, note: Msg | None = None) -> None:
        self._add("mapped", key, value, ours, our_value, note)

    def changed(self, key: str, value: Any, ours: str, our_value: Any, note: Msg) -> None:
        self._add("changed", key, value, ours, our_value, note)

    def unsupported(self, key: str, value: Any, note: Msg | None) -> None:
        self._add("unsupported", key, value, "", None, note)

    def unknown(self, key: str, value: Any) -> None:
        self._add("unknown", key, value, "", None, msg("kohya.unknown"))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["kind"] == kind]

    def source_keys(self) -> set[str]:
        return {e["key"] for e in self.entries}

    def to_json(self, say: Say) -> dict[str, Any]:
        """The report with each message worded in every language of :data:`LANGS`."""

        def both(m: Any) -> dict[str, str]:
            return {lang: say(m, lang) if m else "" for lang in LANGS}

        steps = dict(self.steps)
        for key in ("note", "ours_formula"):
            if key in steps:
                steps[key] = both(steps[key])
        if "differences" in steps:
            steps["differences"] = [both(d) for d in steps["differences"]]
        entries = [{**e, "note": both(e["note"])} for e in self.entries]
        return {"source": self.source, "kind": self.kind, "entries": entries, "defaulted": self.defaulted, "steps": steps}

    def text(self, say: Say, lang: str = "en") -> str:
        """Plain text: one line a key, idle keys (unsupported or unknown at a neutral value) folded into one line."""
        out = [f"{self.source}:"]
        for kind in KINDS:
            rows, idle = self._split(kind)
            if not rows and not idle:
                continue
            out.append(f"\n{say(HEADINGS[kind], lang)}:")
            for e in rows:
                out.append("  " + _line(e, say, lang))
            if idle:
                out.append("  " + say(msg("kohya.report.idle", keys=", ".join(e["key"] for e in idle)), lang))
        if self.defaulted:
            out.append("\n" + say(msg("kohya.report.defaulted", keys=", ".join(self.defaulted)), lang))
        out += self._steps_lines(say, lang)
        return "\n".join(out)

    def markdown(self, say: Say, lang: str = "en") -> str:
        """A Markdown table (the wizard shows it), then the step count."""
        lines = [f"| kohya | → | LoRA Doctor | {say(msg('kohya.table.note'), lang)} |", "|---|---|---|---|"]
        for kind in KINDS:
            rows, idle = self._split(kind)
            heading = say(HEADINGS[kind], lang)
            for e in rows:
                ours = f"`{e['ours']}` = `{_short(e['our_value'])}`" if e["ours"] else heading
                note = say(e["note"], lang) if e["note"] else ""
                lines.append(f"| `{e['key']}` = `{_short(e['value'])}` | {'→' if e['ours'] else '✗'} | {ours} | "
                             f"{_cell(note)} |")
            if idle:
                lines.append(f"| {', '.join(e['key'] for e in idle)} | ✗ | {heading} | "
                             f"{say(msg('kohya.report.idle_value'), lang)} |")
        steps = self._steps_lines(say, lang)
        return "\n".join(lines) + ("\n\n" + "\n\n".join(s.strip() for s in steps if s.strip()) if steps else "")

    def _split(self, kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        rows = self.of(kind)
        if kind not in ("unsupported", "unknown"):
            return rows, []
        return ([e for e in rows if not is_neutral(e["value"])], [e for e in rows if is_neutral(e["value"])])

    def _steps_lines(self, say: Say, lang: str) -> list[str]:
        s = self.steps
        if not s:
            return []
        if "note" in s:
            return ["\n" + say(s["note"], lang)]
        verdict = msg("kohya.report.same") if s["match"] else msg("kohya.report.different")
        head = msg("kohya.report.steps", kohya=s["kohya_total"], ours=s["ours_total"], verdict=verdict)
        out = ["\n" + say(head, lang), f"  kohya: {s['kohya_formula']}", f"  LoRA Doctor: {say(s['ours_formula'], lang)}"]
        out += [f"  - {say(d, lang)}" for d in s.get("differences", [])]
        return out


def _line(e: dict[str, Any], say: Say, lang: str) -> str:
    note = say(e["note"], lang) if e["note"] else ""
    if e["ours"]:
        arrow = f"{e['key']} = {_short(e['value'])} → {e['ours']} = {_short(e['our_value'])}"
        return arrow + (f"  ({note})" if note else "")
    return f"{e['key']} = {_short(e['value'])}: {note}"


def _short(v: Any) -> str:
    text = v if isinstance(v, str) else repr(v)
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= 80 else text[:77] + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
