"""Typed events and the run status: they write exactly the JSON earlier versions wrote, and read it back.

``tests/data/events/`` holds lines from real tiny runs written before events were typed: a rollback run
(alert, change, rollback, samples, checkpoints, finding), a paused then resumed then stopped run, a run the
guard stopped, and a run that failed after a bf16 fallback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.run.events import (
    ABSENT,
    EVENT_TYPES,
    TERMINAL,
    Alert,
    MemorySink,
    NonFiniteAlert,
    OtherEvent,
    RunEvent,
    RunFolderSink,
    RunStatus,
    SaveRefused,
    StepRow,
    Stopped,
    event_class,
    given,
    stamp,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "events"


def lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def dumped(row: dict) -> str:
    """A row as ``trainer.io.append_jsonl`` writes it."""
    return json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


EVENT_LINES = lines("events.jsonl")
METRIC_LINES = lines("metrics.jsonl")


def test_the_fixture_holds_every_kind_of_event_the_loop_emits():
    kinds = {json.loads(line)["type"] for line in EVENT_LINES} | {"step"}
    assert kinds == set(EVENT_TYPES)


@pytest.mark.parametrize("line", EVENT_LINES, ids=lambda s: json.loads(s)["type"])
def test_an_event_line_reads_as_its_class_and_writes_back_byte_for_byte(line):
    d = json.loads(line)
    ev = RunEvent.from_json(d)
    assert type(ev) is event_class(d) and isinstance(ev, EVENT_TYPES[d["type"]]) and not isinstance(ev, OtherEvent)
    assert ev.extra == {}  # every key the loop writes is a field of its class
    assert ev.to_json() == d and dumped(ev.to_json()) == line  # same keys, same order
    assert RunEvent.from_json(ev.to_json()) == ev
    assert type(ev).from_json(d) == ev


@pytest.mark.parametrize("line", EVENT_LINES, ids=lambda s: json.loads(s)["type"])
def test_the_emitters_objects_build_todays_dict(line):
    d = json.loads(line)
    ev = stamp(event_class(d)(**{k: v for k, v in d.items() if k not in ("type", "time")}), step=-1)
    assert isinstance(ev.time, float) and ev.step == d["step"] and ev.extra == {}
    assert dumped(ev.to_json() | {"time": d["time"]}) == dumped({**d})


@pytest.mark.parametrize("line", METRIC_LINES)
def test_a_metrics_row_reads_back_and_writes_back_byte_for_byte(line):
    d = json.loads(line)
    row = StepRow.from_json(d)
    assert row.time is ABSENT and row.step == d["step"] and row.loss == d["loss"]
    assert dumped(row.metrics_row()) == line
    assert StepRow.from_json(row.to_json()) == row and row.to_json()["type"] == "step"


def test_an_older_row_without_the_newer_keys_still_loads_and_keeps_its_shape():
    old = {k: v for k, v in json.loads(METRIC_LINES[0]).items()
           if k in ("step", "epoch", "loss", "grad_norm", "lr", "skipped", "sec_per_step")}
    row = StepRow.from_json(old)
    assert row.weight_norm is ABSENT and not row.weight_norm
    assert row.metrics_row() == old and list(row.metrics_row()) == list(old)


def test_a_newer_file_keeps_what_this_version_does_not_know():
    d = {"type": "alert", "time": 1.0, "step": 3, "level": "error", "kind": "x", "message": "m", "new_key": [1]}
    ev = RunEvent.from_json(d)
    assert isinstance(ev, Alert) and ev.extra == {"new_key": [1]} and ev.to_json() == d
    unknown = {"type": "weather", "time": 1.0, "step": 3, "rain": True}
    other = RunEvent.from_json(unknown)
    assert isinstance(other, OtherEvent) and other.to_json() == unknown


def test_the_loop_stamps_the_time_and_the_step_an_emitter_left_out():
    ev = stamp(Stopped(reason="user", final=None), 7)
    assert isinstance(ev.time, float) and ev.step == 7
    assert list(ev.to_json()) == ["type", "time", "step", "reason", "final"]
    assert stamp(NonFiniteAlert(step=3, level="error", kind="nonfinite_grad", first="grad"), 7).step == 3
    with pytest.raises(TypeError, match="lossy"):
        StepRow(step=1, loss=0.5, lossy=True)  # type: ignore[call-arg]  # what the type check catches first


def test_the_alerts_with_details_read_back_as_their_classes_and_older_lines_still_load():
    old = {"type": "alert", "time": 1.0, "step": 1, "level": "error", "kind": "nonfinite_grad", "first": "grad"}
    alert = RunEvent.from_json(old)
    assert isinstance(alert, NonFiniteAlert) and alert.first == "grad" and alert.kind == "nonfinite_grad"
    assert given(alert.module) is None and given(alert.broke_at_step, alert.step) == 1 and alert.to_json() == old
    refused = {"type": "alert", "time": 2.0, "step": 4, "level": "error", "kind": "save_refused", "message": "m",
               "file": "state.pt", "tensor": "lora.w"}
    ev = Alert.from_json(refused)
    assert isinstance(ev, SaveRefused) and ev.tensor == "lora.w" and dumped(ev.to_json()) == dumped(refused)
    assert type(RunEvent.from_json({**refused, "kind": "distilled_base"})) is Alert


def test_a_misspelled_field_fails_the_type_check(tmp_path, monkeypatch):
    """Emitters construct the events, so the type check sees every field name."""
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(ROOT)  # where mypy finds the packages
    scratch = tmp_path / "emits.py"
    scratch.write_text('from trainer.run.events import NonFiniteAlert, Stopped\n\n'
                       'Stopped(reason="guard", final=None)\n'
                       'Stopped(reson="guard")\n'
                       'NonFiniteAlert(kind="nonfinite_grad", modul="unet")\n', encoding="utf-8")
    out, err, _ = api.run([
        str(scratch), str(ROOT / "trainer" / "run" / "events.py"), "--config-file", str(ROOT / "pyproject.toml"),
        "--follow-imports=skip", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary",
    ])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 2 and all("emits.py:" in line for line in errors), out + err
    assert '"reson"' in errors[0] and '"Stopped"' in errors[0] and '"modul"' in errors[1], errors


def test_the_run_folder_sink_writes_the_lines_earlier_versions_wrote(tmp_path):
    sink = RunFolderSink(tmp_path)
    memory = MemorySink()
    for line in EVENT_LINES:
        ev = RunEvent.from_json(json.loads(line))
        sink(ev)
        memory(ev)
    for line in METRIC_LINES:
        sink(StepRow.from_json(json.loads(line)))
    assert (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines() == EVENT_LINES
    assert (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines() == METRIC_LINES
    assert [e.type for e in memory.of_type("stopped")] == ["stopped", "stopped"]


def test_a_non_finite_number_is_written_as_a_string_and_read_back_as_a_float(tmp_path):
    d = json.loads(next(line for line in METRIC_LINES if '"nan"' in line))
    row = StepRow.from_json({**d, "grad_norm": float("nan"), "grad_norm_clipped": float("nan")})
    RunFolderSink(tmp_path)(row)
    assert (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines() == [dumped(d)]


def test_the_status_enum_says_the_strings_the_run_folder_and_the_api_say():
    # the runner's states, the endings a run returns (its exit codes) and what a reader makes of a dead run
    assert [s.value for s in RunStatus] == ["idle", "starting", "running", "finished", "stopped", "paused",
                                            "guard_stopped", "failed", "interrupted"]
    assert TERMINAL == {s for s in RunStatus if s.is_ending} == {"finished", "stopped", "paused", "guard_stopped",
                                                                 "failed"}
    assert {s: s.exit_code for s in TERMINAL} == {"finished": 0, "stopped": 130, "paused": 130, "guard_stopped": 3,
                                                  "failed": 1}
    assert not any(s.is_ending for s in (RunStatus.IDLE, RunStatus.STARTING, RunStatus.RUNNING, RunStatus.INTERRUPTED))
    assert json.loads((DATA / "status.json").read_text())["status"] in TERMINAL
    assert json.dumps({"status": RunStatus.GUARD_STOPPED}) == '{"status": "guard_stopped"}'
    assert f"status_{RunStatus.PAUSED}" == "status_paused" and str(RunStatus.FAILED) == "failed"


def test_the_runner_has_no_status_set_of_its_own():
    import trainer.train.runner as runner

    assert runner.TERMINAL is TERMINAL


def test_the_snapshot_is_typed_and_its_json_is_the_dict_it_used_to_be():
    from trainer.train.runner import Runner, RunSnapshot

    runner = Runner()
    for line in EVENT_LINES[:3]:
        runner._on_event(RunEvent.from_json(json.loads(line)))
    runner._on_event(StepRow.from_json({"type": "step", "time": 1.0, **json.loads(METRIC_LINES[0])}))
    snap = runner.snapshot()
    assert isinstance(snap, RunSnapshot) and snap.status == RunStatus.RUNNING and snap.step == 1
    assert snap.rows == 1 and snap.metrics[0].type == "step" and snap.samples[0].type == "sample_ready"
    out = snap.to_json()
    assert list(out) == ["version", "active", "status", "run_dir", "step", "total_steps", "metrics", "rows",
                         "alerts", "samples", "checkpoints", "events", "progress", "message", "it_per_sec",
                         "eta_seconds", "memory", "best_val", "refusal", "findings"]  # added since, last
    assert out["events"] == [json.loads(line) for line in EVENT_LINES[:3]]
    json.dumps(out)  # plain JSON types throughout


def test_the_doctor_and_training_agree_on_emulated_bf16(monkeypatch):
    """A GPU that only emulates bf16 (a T4, a V100): training falls back to fp16, so the doctor must not
    prescribe bf16 there."""
    import torch

    from trainer.config.schema import Config
    from trainer.doctor.diagnose import bf16_available
    from trainer.models.precision import decide_precision, resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    plan = decide_precision("bf16", resolve_device("auto"))
    assert plan.precision == "fp16" and plan.fallback
    assert bf16_available(Config()) is False
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # native
    assert decide_precision("bf16", resolve_device("auto")).precision == "bf16"
    assert bf16_available(Config()) is True
