"""The word layer: every template in both languages with the same fields, and codes the trainer uses all exist."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

import words
from trainer.message import Msg, msg

REPO = Path(__file__).resolve().parent.parent
HANGUL = re.compile("[\uac00-\ud7a3]")


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


@pytest.mark.parametrize("code", sorted(words.TEXTS))
def test_every_template_has_both_languages_with_the_same_fields(code):
    en, ko = words.TEXTS[code]
    assert en.strip() and ko.strip(), code
    assert _fields(en) == _fields(ko), code


def _codes_used_in_trainer() -> set[str]:
    out = set()
    for p in (REPO / "trainer").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("msg", "Msg")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out.add(node.args[0].value)
    return out


def test_every_code_the_trainer_uses_has_words():
    missing = sorted(_codes_used_in_trainer() - set(words.TEXTS))
    assert not missing, f"codes with no words in words/: {missing}"


def test_a_message_is_worded_in_the_readers_language_and_nests():
    words.register("test_only", {"test_only.a": ("{n} steps of {what}", "{what} {n}스텝"),
                                 "test_only.b": ("loss", "손실")})
    try:
        m = msg("test_only.a", n=3, what=msg("test_only.b"))
        assert words.say(m, "en") == "3 steps of loss"
        assert words.say(m, "ko") == "손실 3스텝"
        assert words.both(m) == {"en": "3 steps of loss", "ko": "손실 3스텝"}
        assert Msg.from_json(m.to_json()) == m
        assert words.say({"en": "old file", "ko": "옛 파일"}, "ko") == "옛 파일"  # a run folder worded before codes
        assert words.say(msg("test_only.a", n=1, what={"en": "loss", "ko": "손실"}), "ko") == "손실 1스텝"
        with pytest.raises(ValueError, match="defined twice"):
            words.register("again", {"test_only.a": ("x", "x")})
    finally:
        for k in ("test_only.a", "test_only.b"):
            words.TEXTS.pop(k)


# trainer modules that still word their own messages; the list only shrinks
STILL_WORDED_IN_TRAINER: set[str] = {
    "trainer/cli.py",
    "trainer/data/problems.py",
    "trainer/data/scan.py",
    "trainer/doctor/detectors.py",
    "trainer/doctor/diagnose.py",
    "trainer/doctor/changes.py",
    "trainer/doctor/pictures.py",
    "trainer/doctor/risks.py",
    "trainer/doctor/verdict.py",
    "trainer/models/base.py",
    "trainer/plan/memory.py",
    "trainer/plan/memory_fit.py",
    "trainer/plan/steps.py",
    "trainer/review/grid.py",
    "trainer/run/samples.py",
}


def test_the_trainer_library_holds_no_korean():
    worded = {p.relative_to(REPO).as_posix() for p in (REPO / "trainer").rglob("*.py")
              if HANGUL.search(p.read_text(encoding="utf-8"))}
    assert worded <= STILL_WORDED_IN_TRAINER, f"Korean words inside trainer/ (move them to words/): {sorted(worded - STILL_WORDED_IN_TRAINER)}"
    gone = STILL_WORDED_IN_TRAINER - worded
    assert not gone, f"these no longer hold words; take them off STILL_WORDED_IN_TRAINER: {sorted(gone)}"


def test_only_the_cli_front_end_in_trainer_imports_the_word_layer():
    importers = set()
    for p in (REPO / "trainer").rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "words" or n.startswith("words.") for n in names):
                importers.add(p.relative_to(REPO).as_posix())
    assert importers <= {"trainer/cli.py"}, f"trainer returns Msg; only its CLI words them: {sorted(importers)}"
