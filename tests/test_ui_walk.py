"""What a newcomer's walk through the app tripped over (issue 18), pinned without a server: toasts that pile up,
a failed scan under the old report, a hidden picture count, statuses and run lists in English on a Korean page,
a stop message that outlives the run, two gradient lines that hide each other, the chosen preset unmarked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import snapshot_of
from trainer.data.scan import scan_dataset
from trainer.errors import UserError
from trainer.run.events import StepRow
from trainer.train.runner import Runner, RunState
from ui import plots
from ui.binding import UI, Toasts
from ui.context import AppContext, status_label
from ui.i18n import TEXTS, t
from ui.paths import PathPolicy
from ui.steps import dataset, preset, train_poll, troubleshoot
from words import TEXTS as ALL_WORDS


def _ctx(tmp_path: Path) -> AppContext:
    (tmp_path / "runs").mkdir(exist_ok=True)
    return AppContext(workspace=tmp_path, policy=PathPolicy(tmp_path, False), runner=Runner())


def _run(ctx: AppContext, name: str, status: dict) -> Path:
    run = ctx.runs_dir / "lora" / name
    run.mkdir(parents=True)
    (run / "config.toml").write_text("", encoding="utf-8")
    (run / "status.json").write_text(json.dumps(status), encoding="utf-8")
    return run


# ------------------------------------------------------------------------------------------- toasts


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_same_warning_is_not_toasted_again_while_its_toast_is_up(monkeypatch):
    shown: list[str] = []
    monkeypatch.setattr("gradio.Warning", lambda message, **kw: shown.append(message))
    clock = Clock()
    toasts = Toasts(duration=8.0, limit=3, clock=clock)
    for _ in range(5):
        toasts.warn("scan the dataset first")
    assert shown == ["scan the dataset first"]
    clock.now += 9  # its toast is gone: the next one may show
    toasts.warn("scan the dataset first")
    assert len(shown) == 2


def test_at_most_a_few_toasts_are_up_at_once(monkeypatch):
    shown: list[str] = []
    monkeypatch.setattr("gradio.Warning", lambda message, **kw: shown.append(message))
    toasts = Toasts(duration=8.0, limit=3, clock=Clock())
    for i in range(6):
        toasts.warn(f"problem {i}")
    assert shown == ["problem 0", "problem 1", "problem 2"]


def test_a_refused_handler_toasts_through_the_limiter_and_resets_its_views(tmp_path, monkeypatch):
    ui = UI(_ctx(tmp_path))
    shown: list[str] = []
    monkeypatch.setattr("gradio.Warning", lambda message, **kw: shown.append(message))
    ui.c.update({"msg": object(), "report": object(), "other": object()})

    def refuse(*, lang: str) -> dict:
        raise UserError("no such folder")

    handler = ui.wrap(refuse, "msg", reset=lambda lang: {"report": []})
    out = handler(lang="en")
    assert out[ui.c["report"]] == [] and "no such folder" in out[ui.c["msg"]] and ui.c["other"] not in out
    handler(lang="en")
    assert shown == ["no such folder"]


# ------------------------------------------------------------------------------------------ dataset


def test_a_failed_scan_leaves_nothing_of_the_previous_dataset(tmp_path, make_image):
    for i in range(3):
        make_image(tmp_path / "data" / "10_zxc" / f"{i}.png", caption="zxc")
    from trainer.config.schema import Config

    cfg = Config()
    cfg.dataset.path = str(tmp_path / "data")
    shown = dataset.render_report(scan_dataset(cfg.dataset), "en")
    cleared = dataset.empty_report("en")
    assert set(shown) <= set(cleared)  # every view of a report is reset
    assert cleared["ds_gallery"] == [] and cleared["ds_summary"] == "" and cleared["report_state"] is None
    assert cleared["ds_size_hist"] is None and cleared["ds_thumbs_note"] == ""


def test_the_thumbnails_say_how_many_of_the_pictures_they_show(tmp_path, make_image):
    from trainer.config.schema import Config

    for i in range(dataset.MAX_THUMBS + 2):
        make_image(tmp_path / "data" / "1_zxc" / f"{i:02d}.png", caption="zxc")
    cfg = Config()
    cfg.dataset.path = str(tmp_path / "data")
    out = dataset.render_report(scan_dataset(cfg.dataset), "en")
    assert len(out["ds_gallery"]) == dataset.MAX_THUMBS
    assert out["ds_thumbs_note"].startswith(f"{dataset.MAX_THUMBS} of {dataset.MAX_THUMBS + 2} pictures shown")
    ko = dataset.render_report(scan_dataset(cfg.dataset), "ko")["ds_thumbs_note"]
    assert f"{dataset.MAX_THUMBS + 2}장 중" in ko
    for i in range(dataset.MAX_THUMBS + 2 - 5, dataset.MAX_THUMBS + 2):  # all shown: nothing to say
        (tmp_path / "data" / "1_zxc" / f"{i:02d}.png").unlink()
    assert dataset.render_report(scan_dataset(cfg.dataset), "en")["ds_thumbs_note"] == ""


def test_a_scan_reports_each_picture_as_it_goes(tmp_path, make_image):
    from trainer.config.schema import Config

    for i in range(5):
        make_image(tmp_path / "data" / "1_zxc" / f"{i}.png", caption="zxc")
    make_image(tmp_path / "reg" / "1_world" / "a.png", caption="a world")
    cfg = Config()
    cfg.dataset.path, cfg.dataset.reg_path = str(tmp_path / "data"), str(tmp_path / "reg")
    calls: list[tuple[int, int]] = []
    report = scan_dataset(cfg.dataset, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 6) for i in range(7)] and len(report.items) == 6


# ------------------------------------------------------------------------------------------- Korean


def test_run_lists_and_findings_name_the_status_in_the_page_language(tmp_path):
    ctx = _ctx(tmp_path)
    _run(ctx, "a", {"status": "guard_stopped"})
    labels = [label for label, _ in ctx.run_choices("ko")]
    assert labels == ["lora/a (수치 감시로 정지됨)"]
    assert "guard_stopped" not in status_label({"status": "guard_stopped"}, "en")
    interrupted = status_label({"status": "interrupted", "resume_step": 20}, "ko")
    assert interrupted == "중단됨, 20 스텝부터 이어서 학습 가능"
    assert status_label({"status": "interrupted", "resume_step": None}, "en") == \
        "interrupted, no checkpoint to resume from"
    for status in ("running", "stopped", "finished", "guard_stopped", "failed"):
        assert status_label({"status": status}, "ko") == t(f"status_{status}", "ko"), status
    title = troubleshoot.findings_markdown({"status": "stopped", "observed": []}, "ko").splitlines()[0]
    assert "정지됨" in title and "stopped" not in title


def test_signal_and_prompt_kind_ids_are_shown_in_words():
    import words
    from trainer.run.samples import PROMPT_KINDS, prompt_kind
    from ui import live
    from ui.i18n import kind_label, signal_label

    snap = {"alerts": [{"kind": "distilled_base", "message": "turbo"}, {"kind": "precision_fallback", "message": "x"},
                       {"kind": "nonfinite_grad", "action": "rollback", "first": "grad"}], "status": "running"}
    snap = snapshot_of(snap)
    warnings = live.warnings_markdown(snap, "ko")
    assert "distilled_base" not in warnings and "precision_fallback" not in warnings
    assert t("signal_precision_fallback", "ko") in warnings
    assert "되돌리기" in live.alert_html(snap, "ko", None) and "rollback" not in live.alert_html(snap, "ko", None)
    assert signal_label("leakage", "ko") != "leakage" and signal_label("no_such_signal", "ko") == "no_such_signal"
    for kind in PROMPT_KINDS:
        assert kind_label(kind, "ko") == words.say(prompt_kind(kind), "ko") == t(f"kind_{kind}", "ko") != kind
    assert kind_label("trigger#2", "en") == "trigger only #2"
    diag = {"status": "finished", "observed": [],
            "parent": {"changes": {"optim.lr": [1e-3, 5e-4]}, "resolved": ["leakage"], "new": [], "still": ["dose_over"]}}
    text = troubleshoot.findings_markdown(diag, "ko")
    assert "leakage" not in text and "dose_over" not in text and signal_label("dose_over", "ko") in text


def test_every_part_of_a_run_that_fails_without_failing_it_is_named_in_words():
    """The warnings a run gives when a part of it fails and it goes on (``Alert.failed(kind, ...)``: the last
    samples, the end's findings, the model measures, the more pictures) show their kind as words in both languages."""
    import re

    from ui.i18n import signal_label

    source = " ".join(f.read_text(encoding="utf-8") for f in (Path(__file__).parent.parent / "trainer").rglob("*.py"))
    kinds = set(re.findall(r'Alert\.failed\("([a-z_]+)"', source)) | {"measures"}  # its own words: at which step
    assert {"samples", "findings", "measures", "edge_pictures"} <= kinds
    for kind in kinds:
        assert signal_label(kind, "en") != kind and signal_label(kind, "ko") != kind, kind


def test_one_korean_spelling_per_term():
    """Variants of one term (seen in the walk) may not both appear in the UI's words or the doctor's advice."""
    variants = [("그래디언트", "그라디언트"), ("저장본", "체크포인트"), ("표본", "샘플"), ("에포크", "에폭")]
    words = " ".join(ko for _, ko in TEXTS.values()) + " " + " ".join(ko for _, ko in ALL_WORDS.values())
    from ui.fields import FIELDS

    words += " " + " ".join(f"{f.ko} {f.help('ko') or ''}" for f in FIELDS)
    kb = Path(__file__).resolve().parent.parent / "trainer" / "doctor" / "knowledge" / "kb.toml"
    words += " " + " ".join(line for line in kb.read_text(encoding="utf-8").splitlines() if "_ko = " in line)
    for a, b in variants:
        assert not (a in words and b in words), (a, b)


# ------------------------------------------------------------------------------------------- train


def test_the_stop_message_goes_when_the_run_ends(tmp_path):
    ui = UI(_ctx(tmp_path))
    runner = ui.ctx.runner
    runner.state = RunState(status="stopped")
    runner.version = 7
    out = train_poll.poll_view(ui, {"version": 6, "status": "running", "lang": "en", "run": None}, "en")
    assert out.get("train_msg") == ""
    again = train_poll.poll_view(ui, {**out["poll_state"]}, "en")
    assert "train_msg" not in again  # a later look leaves the box to what the buttons write


# ------------------------------------------------------------------------------------------- plots


def test_the_gradient_lines_before_and_after_clipping_can_be_told_apart():
    rows = [StepRow(step=i, loss=0.1, grad_norm=0.5, grad_norm_clipped=0.5, lr=1e-4) for i in range(1, 40)]
    before, after = plots.grad_figure(rows, max_norm=1.0, lang="en")["data"][:2]
    assert (before["name"], after["name"]) == ("before clipping", "after clipping")
    assert before["y"] == after["y"]  # nothing clipped: the same values, so the styles must differ
    assert before["line"]["width"] >= 3 * after["line"]["width"]
    assert before["line"]["color"] != after["line"]["color"]


# ------------------------------------------------------------------------------------------ presets


def test_only_the_chosen_preset_card_is_marked():
    assert preset.card_variant("demo-character", "demo-character") == "primary"
    assert preset.card_variant("sd15-style", "demo-character") == "secondary"
    assert preset.card_variant("sd15-style", None) == "secondary"


def test_the_preset_cards_come_by_model_family_the_demo_first(tmp_path):
    """The Preset step shows its cards a family at a time, in the families' order; a user's preset of a family no
    longer registered comes last under its own name, and one that names no family is the default's."""
    from trainer.config.presets import list_presets, presets_by_family

    groups = presets_by_family(list_presets())
    assert [label for label, _ in groups] == ["SD 1.5", "SDXL", "SD 3.5", "Flux.1", "Z-Image"]
    ids = {label: [p.id for p in ps] for label, ps in groups}
    assert ids["SD 1.5"][0] == "demo-character" and {"low-vram", "stability-first", "sd15-style"} <= set(ids["SD 1.5"])
    assert set(ids["Flux.1"]) == {"flux-character", "flux-character-12gb", "flux-character-16gb"}
    assert sum(len(v) for v in ids.values()) == len(list_presets())
    (tmp_path / "mine.toml").write_text('[preset]\nversion = 1\nname_en = "Mine"\nname_ko = "내 것"\n'
                                        'description_en = "x"\ndescription_ko = "x"\n[model]\nfamily = "qwen"\n')
    assert presets_by_family(list_presets([tmp_path]))[-1][0] == "qwen"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_new_words_exist_in_both_languages(lang):
    for key in ("thumbs_shown", "status_interrupted", "status_resume_from", "status_no_resume"):
        assert t(key, lang, shown=1, total=2, step=3)
