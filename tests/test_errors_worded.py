"""Errors a user can act on carry a message code, not a sentence: ``str(e)`` stays the English the CLI prints and
the tests match, and the app words the same error in the reader's language."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest

import words
from trainer.config.overrides import apply_overrides
from trainer.config.schema import from_dict
from trainer.errors import UserError
from trainer.message import msg

REPO = Path(__file__).resolve().parent.parent
HANGUL = re.compile("[\uac00-\ud7a3]")
# functions that build an error's Msg themselves (the whole of a pydantic error)
BUILDS_A_MSG = {"format_validation_error"}


def _user_error_arguments():
    for p in sorted((REPO / "trainer").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "UserError":
                yield f"{p.relative_to(REPO).as_posix()}:{node.lineno}", node


def test_every_user_error_in_the_trainer_is_given_a_message_code():
    found = list(_user_error_arguments())
    assert len(found) > 80  # the walk sees them all
    bad = [where for where, node in found
           if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Call)
           or not isinstance(node.args[0].func, ast.Name)
           or node.args[0].func.id not in {"msg", *BUILDS_A_MSG}]
    assert not bad, f"raise UserError(msg('error.<area>.<what>', ...)) with its words in words/errors*.py: {bad}"


def test_a_user_error_is_english_as_a_string_and_words_itself_in_korean():
    e = UserError(msg("error.set.no_equals", item="lr"))
    assert str(e) == e.message == "--set 'lr': write it as section.key=value, e.g. --set optim.lr=5e-5"
    assert e.say("en") == str(e)
    assert e.say("ko") == "--set 'lr': section.key=value 꼴로 쓰세요. 예: --set optim.lr=5e-5"
    again = pickle.loads(pickle.dumps(e))  # an error from another process still words itself
    assert str(again) == str(e) and again.say("ko") == e.say("ko")
    plain = UserError("already worded by the app")  # the app's own errors: text in the reader's language
    assert str(plain) == plain.say("ko") == "already worded by the app"


@pytest.mark.parametrize("data", [
    {"optim": {"lr": -1}}, {"lora": {"rank": 0}}, {"lora": {"rank": "x"}}, {"lora": {"rank": 1.5}},
    {"optim": {"lr": float("inf")}}, {"train": {"epochs": 10**9}}, {"optim": {"optimizer": "zzz"}},
    {"sample": {"enabled": "maybe"}}, {"dataset": {"path": 5}}, {"train": {"device": "x"}}, {"optim": {"lr": "abc"}},
    {"lora": {"rnak": 3}}, {"dataset": {"trigger": "a\x00b"}}, {"dataset": {"trigger": "a" * 300}},
    {"dataset": {"caption_ext": "txt"}}, {"dose": {"fit_low": 0.5, "fit_high": 0.3}}, {"save": {"name": "a/b"}},
    {"train": {"max_steps": 1e23}},
])
def test_a_config_error_reads_wholly_in_korean(data):
    """Each of pydantic's refusals the config meets has Korean words whose English is pydantic's own sentence;
    one that stops matching (a new pydantic) falls back to the English sentence and fails here."""
    with pytest.raises(UserError) as e:
        from_dict(data, origin="c.toml")
    english, korean = str(e.value), e.value.say("ko")
    assert english.startswith("config error in c.toml: ") and not HANGUL.search(english)
    assert korean.startswith("c.toml의 설정 오류: ")
    rest = korean.removeprefix("c.toml의 설정 오류: ")
    assert HANGUL.search(rest) and not re.search(r"\b(input|should|value error|unknown|allowed)\b", rest), korean


def test_several_refusals_are_joined_in_both_languages():
    with pytest.raises(UserError) as e:
        from_dict({"lora": {"rank": 0}, "optim": {"lr": 0}})
    assert str(e.value) == ("config error: 'lora.rank' = 0: input should be greater than or equal to 1; "
                            "'optim.lr' = 0: input should be greater than 0")
    assert e.value.say("ko") == "설정 오류: 'lora.rank' = 0: 1 이상이어야 합니다; 'optim.lr' = 0: 0보다 커야 합니다"


def test_a_bad_override_is_worded_in_korean():
    with pytest.raises(UserError, match=r"--set 'lora.rank.x=1': 'rank' is a value, not a section") as e:
        apply_overrides({}, ["lora.rank=3", "lora.rank.x=1"])
    assert e.value.say("ko") == "--set 'lora.rank.x=1': 'rank' 자리는 섹션이 아니라 값입니다"


def test_every_error_template_has_korean_of_its_own():
    codes = [c for c in words.TEXTS if c.startswith("error.")]
    assert len(codes) > 100
    no_korean = {c for c in codes if not HANGUL.search(words.TEXTS[c][1])}
    # the ones made only of keys, values and punctuation
    assert no_korean <= {"error.and", "error.config.rule", "error.config.bad_value", "error.cli.check_dataset",
                         "error.kohya.bad_value", "error.kohya.bad_value_ours", "error.input.choices",
                         "error.input.value_error", "error.validation.scan"}, sorted(no_korean)


def test_a_refused_run_shows_its_reason_in_the_readers_language():
    from tests.helpers import snapshot_of
    from ui.live import status_line

    refusal = msg("error.train.no_usable", path="/data/x")
    snap = snapshot_of({"status": "failed", "message": words.say(refusal, "en"), "refusal": refusal.to_json()})
    assert "> dataset.path /data/x: no usable images" in status_line(snap, "en")
    assert "> dataset.path /data/x: 쓸 수 있는 그림이 없습니다" in status_line(snap, "ko")
    assert snapshot_of(snap.to_json()) == snap


def test_a_trainer_error_reaches_a_korean_page_in_korean(tmp_path, monkeypatch):
    """The app's real Scan handler on a folder with no pictures: the error the trainer raises is shown, in
    the toast and the step's message box, in Korean."""
    from trainer.config.schema import Config
    from trainer.data.scan import scan_dataset
    from trainer.train.runner import Runner
    from ui.app import build_app
    from ui.context import make_context
    from ui.fields import values_from_config

    shown: list[str] = []
    monkeypatch.setattr("gradio.Warning", lambda message, **kw: shown.append(message))
    empty = tmp_path / "datasets" / "empty"
    empty.mkdir(parents=True)
    cfg = Config()
    cfg.dataset.path = str(empty)
    with pytest.raises(UserError, match="no images") as e:
        scan_dataset(cfg.dataset)
    korean = e.value.say("ko")
    assert HANGUL.search(korean) and korean != str(e.value)

    ctx = make_context(tmp_path, lang="ko", runner=Runner())
    demo = build_app(ctx)
    scan = next(f.fn for f in demo.fns.values() if f.api_name == "scan")
    values = {**values_from_config(cfg), "dataset_path": str(empty)}
    out = scan(lang="ko", report_state=None, progress=lambda *a, **k: None, **values)
    assert shown == [korean]
    assert any(isinstance(v, str) and korean in v for v in out.values())
    assert not any(isinstance(v, str) and "no images" in v for v in out.values())


def test_a_run_refused_in_the_training_thread_keeps_its_message_to_word(tmp_path):
    from trainer.config.schema import Config
    from trainer.train.runner import Runner
    from ui.live import status_line

    cfg = Config()
    cfg.save.output_dir = str(tmp_path / "runs")
    runner = Runner()
    runner.start(cfg)  # no dataset folder: refused before anything is written
    assert runner.wait(60)
    snap = runner.snapshot()
    assert snap.status == "failed" and snap.message == "dataset.path is empty: give the folder of training images"
    assert snap.refusal == msg("error.train.no_dataset")
    assert "> dataset.path가 비어 있습니다" in status_line(snap, "ko")
