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
STILL_WORDED_IN_TRAINER: set[str] = set()


def test_the_trainer_library_holds_no_korean():
    worded = {p.relative_to(REPO).as_posix() for p in (REPO / "trainer").rglob("*.py")
              if HANGUL.search(p.read_text(encoding="utf-8"))}
    assert worded <= STILL_WORDED_IN_TRAINER, f"Korean words inside trainer/ (move them to words/): {sorted(worded - STILL_WORDED_IN_TRAINER)}"
    gone = STILL_WORDED_IN_TRAINER - worded
    assert not gone, f"these no longer hold words; take them off STILL_WORDED_IN_TRAINER: {sorted(gone)}"


# trainer modules that word messages: the CLI's commands, which print for people; the rest of the library returns
# codes and values, and its run-folder files, an error's English and the console are worded by the words installed in
# codes.wording. pyproject.toml's import-linter contracts say the same (docs/design.md, "Layers").
MAY_IMPORT_WORDS = {"trainer/cli.py", "trainer/caption/command.py", "trainer/masking/command.py"}


def _imports_words(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "words" or a.name.startswith("words.") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "words":
            return True
    return False


def test_only_the_writing_edges_of_the_trainer_import_words():
    importing = {p.relative_to(REPO).as_posix() for p in (REPO / "trainer").rglob("*.py")
                 if _imports_words(ast.parse(p.read_text(encoding="utf-8")))}
    assert importing <= MAY_IMPORT_WORDS, f"word these in the app or CLI instead: {sorted(importing - MAY_IMPORT_WORDS)}"


def test_a_message_written_to_a_file_is_worded_in_both_languages():
    from trainer.data.problems import problem

    row = problem("too_small", "a.png", w=8, h=8, res=512, min_side=64)
    written = words.worded({"problems": [row], "n": 1, "message_json": row["message"].to_json()})
    assert written["problems"][0]["message"]["ko"] == words.say(row["message"], "ko")
    assert written["problems"][0]["message"]["en"].startswith("8×8 is far too small")
    assert written["message_json"] == written["problems"][0]["message"] and written["n"] == 1


def test_the_run_folder_keeps_findings_worded_as_before(tmp_path):
    """events.jsonl and plan.json are read by older versions of the app: a message in them is {"en", "ko"}."""
    import json

    from trainer.doctor.plan_findings import dose_finding
    from trainer.run.events import RunFolderSink
    from trainer.run.worded import write_worded_json

    f = dose_finding({"dose_zone": "over", "dose": 9.0, "dose_low": 0.4, "dose_high": 3.0})
    RunFolderSink(tmp_path)(f.to_event())
    [row] = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert row["message"] == words.both(f.message) and "9" in row["message"]["en"] and "학습량" in row["message"]["ko"]
    write_worded_json(tmp_path / "plan.json", {"formula": msg("plan.zone.fit"), "n": 2})
    assert json.loads((tmp_path / "plan.json").read_text(encoding="utf-8")) == {"formula": {"en": "fit", "ko": "적정"},
                                                                               "n": 2}


def test_the_app_holds_no_words_of_its_own():
    """ui/ words everything through words/ too; the one exception is the language switch, where each language
    is named in itself."""
    worded = [f"{p.relative_to(REPO).as_posix()}:{i}" for p in (REPO / "ui").rglob("*.py")
              for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
              if HANGUL.search(line) and '("한국어", "ko")' not in line]
    assert not worded, f"Korean words inside ui/ (move them to words/): {worded}"
