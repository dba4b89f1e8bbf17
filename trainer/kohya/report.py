"""The mapping report of a kohya import or export: every source key with what became of it, in English and
Korean, as text (the CLI), Markdown (the wizard) or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainer.kohya.mapping import is_neutral

KINDS = ("mapped", "changed", "unsupported", "unknown")
HEADINGS = {
    "mapped": ("Carried over", "옮긴 설정"),
    "changed": ("Changed on purpose", "일부러 바꾼 값"),
    "unsupported": ("Not carried over (what we do instead)", "옮기지 않은 설정(대신 하는 일)"),
    "unknown": ("Not recognised", "알 수 없는 키"),
}


@dataclass
class Report:
    source: str
    kind: str
    """"gui" (kohya_ss JSON), "sd" (sd-scripts TOML) or "export" (ours → sd-scripts)."""
    entries: list[dict[str, Any]] = field(default_factory=list)
    defaulted: list[str] = field(default_factory=list)
    """sd-scripts keys its TOML left out, read at sd-scripts' default."""
    steps: dict[str, Any] = field(default_factory=dict)
    """kohya's step count, ours, whether they match, and each cause of a difference."""

    def _add(self, kind: str, key: str, value: Any, ours: str, our_value: Any, en: str, ko: str) -> None:
        self.entries.append({"kind": kind, "key": key, "value": value, "ours": ours, "our_value": our_value,
                             "note": {"en": en, "ko": ko}})

    def mapped(self, key: str, value: Any, ours: str, our_value: Any, en: str = "", ko: str = "") -> None:
        self._add("mapped", key, value, ours, our_value, en, ko)

    def changed(self, key: str, value: Any, ours: str, our_value: Any, en: str, ko: str) -> None:
        self._add("changed", key, value, ours, our_value, en, ko)

    def unsupported(self, key: str, value: Any, en: str, ko: str) -> None:
        self._add("unsupported", key, value, "", None, en, ko)

    def unknown(self, key: str, value: Any) -> None:
        self._add("unknown", key, value, "", None, "not recognised", "알 수 없음")

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["kind"] == kind]

    def source_keys(self) -> set[str]:
        return {e["key"] for e in self.entries}

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "entries": self.entries, "defaulted": self.defaulted,
                "steps": self.steps}

    def text(self, lang: str = "en") -> str:
        """Plain text: one line a key, idle keys (unsupported or unknown at a neutral value) folded into one line."""
        i = 0 if lang == "en" else 1
        out = [f"{self.source}:"]
        for kind in KINDS:
            rows, idle = self._split(kind)
            if not rows and not idle:
                continue
            out.append(f"\n{HEADINGS[kind][i]}:")
            for e in rows:
                out.append("  " + _line(e, lang))
            if idle:
                word = "left at an idle value: " if lang == "en" else "꺼진 값 그대로: "
                out.append("  " + word + ", ".join(e["key"] for e in idle))
        if self.defaulted:
            out.append(("\nsd-scripts defaults used for keys the file leaves out: " if lang == "en"
                        else "\n파일에 없어 sd-scripts 기본값을 쓴 키: ") + ", ".join(self.defaulted))
        out += self._steps_lines(lang)
        return "\n".join(out)

    def markdown(self, lang: str = "en") -> str:
        """A Markdown table (the wizard shows it), then the step count."""
        i = 0 if lang == "en" else 1
        head = ("| kohya | → | LoRA Doctor | note |" if lang == "en" else "| kohya | → | LoRA Doctor | 설명 |")
        lines = [head, "|---|---|---|---|"]
        for kind in KINDS:
            rows, idle = self._split(kind)
            for e in rows:
                ours = f"`{e['ours']}` = `{_short(e['our_value'])}`" if e["ours"] else HEADINGS[kind][i]
                note = e["note"][lang] or ""
                lines.append(f"| `{e['key']}` = `{_short(e['value'])}` | {'→' if e['ours'] else '✗'} | {ours} | "
                             f"{_cell(note)} |")
            if idle:
                lines.append(f"| {', '.join(e['key'] for e in idle)} | ✗ | {HEADINGS[kind][i]} | "
                             f"{'idle value' if lang == 'en' else '꺼진 값'} |")
        steps = self._steps_lines(lang)
        return "\n".join(lines) + ("\n\n" + "\n\n".join(s.strip() for s in steps if s.strip()) if steps else "")

    def _split(self, kind: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        rows = self.of(kind)
        if kind not in ("unsupported", "unknown"):
            return rows, []
        return ([e for e in rows if not is_neutral(e["value"])], [e for e in rows if is_neutral(e["value"])])

    def _steps_lines(self, lang: str) -> list[str]:
        s = self.steps
        if not s:
            return []
        if "note" in s:
            return ["\n" + s["note"][lang]]
        head = "Step count" if lang == "en" else "스텝 수"
        same = ("the same" if lang == "en" else "같음") if s["match"] else ("different" if lang == "en" else "다름")
        out = [f"\n{head}: kohya {s['kohya_total']}, LoRA Doctor {s['ours_total']} ({same})",
               f"  kohya: {s['kohya_formula']}", f"  LoRA Doctor: {s['ours_formula'][lang]}"]
        out += [f"  - {d[lang]}" for d in s.get("differences", [])]
        return out


def _line(e: dict[str, Any], lang: str) -> str:
    note = e["note"][lang]
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
