"""Two runs side by side (issue 21): the settings that differ, both runs' curves, their grids lined up by prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import tiny_config
from trainer.config.schema import save_config
from trainer.review.compare import compare_runs
from ui import plots


def fake_run(root: Path, name: str, lr: float, kinds: list[str], steps=(0, 2), val: bool = False,
             parent: Path | None = None) -> Path:
    """A finished-looking run folder: config, four metric rows (with ``val_loss`` when asked), one sample picture
    per prompt kind at each of ``steps``, and its journal entry."""
    run = root / "runs" / name / "20260101-000000"
    (run / "samples").mkdir(parents=True)
    cfg = tiny_config(root / "data", root / "runs", {"optim.lr": lr, "save.name": name})
    save_config(cfg, run / "config.toml")
    rows = [{"step": s, "loss": 0.5 / s * (1 + lr), "grad_norm": 0.1 * s, **({"val_loss": 0.4 + s} if val else {})}
            for s in range(1, 5)]
    rows[2]["loss"] = "nan"  # metrics.jsonl writes a non-finite value as a string
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for step in steps:
        folder = run / "samples" / f"step-{step:06d}"
        folder.mkdir()
        samples = []
        for i, kind in enumerate(kinds):
            file = f"{i:02d}.png"
            Image.new("RGB", (8, 8), (40 * i, 10 * step, 90)).save(folder / file)
            samples.append({"index": i, "kind": kind, "prompt": f"{kind} prompt", "file": file, "seed": 1234})
        (folder / "manifest.json").write_text(json.dumps({"step": step, "samples": samples}), encoding="utf-8")
    journal = {"run": str(run), "parent": None, "changes": {}}
    if parent is not None:
        journal = {"run": str(run), "parent": str(parent), "changes": {"optim.lr": [0.001, lr]}}
    (run / "journal.json").write_text(json.dumps(journal), encoding="utf-8")
    (run / "status.json").write_text(json.dumps({"status": "finished"}), encoding="utf-8")
    return run


@pytest.fixture
def two_runs(tmp_path) -> tuple[Path, Path]:
    a = fake_run(tmp_path, "a", 1e-3, ["trigger", "no_trigger"])
    b = fake_run(tmp_path, "b", 5e-4, ["trigger", "trigger_outfit", "no_trigger"], steps=(0, 2, 4), val=True)
    return a, b


def test_the_difference_names_the_learning_rate_with_both_values(two_runs):
    a, b = two_runs
    result = compare_runs(a, b)
    assert result["diff_source"] == "config"
    diff = {key: (va, vb) for key, va, vb in result["diff"]}
    assert diff["optim.lr"] == (pytest.approx(1e-3), pytest.approx(5e-4))
    assert diff["save.name"] == ("a", "b")
    assert "save.output_dir" not in diff and "preset" not in diff  # the same for every run of a workspace
    assert compare_runs(a, a)["diff"] == []


def test_a_journal_entry_gives_the_difference_either_way_round(tmp_path):
    parent = fake_run(tmp_path, "p", 1e-3, ["trigger"])
    child = fake_run(tmp_path, "c", 2e-3, ["trigger"], parent=parent)
    forward = compare_runs(parent, child)
    assert forward["diff_source"] == "journal" and forward["diff"] == [("optim.lr", 0.001, 0.002)]
    backward = compare_runs(child, parent)
    assert backward["diff_source"] == "journal" and backward["diff"] == [("optim.lr", 0.002, 0.001)]


def test_the_series_hold_both_runs_points_and_validation_only_where_it_exists(two_runs):
    result = compare_runs(*two_runs)
    a, b = result["series"]["a"], result["series"]["b"]
    for side in (a, b):
        assert side["loss"]["steps"] == [1, 2, 3, 4] and side["grad_norm"]["steps"] == [1, 2, 3, 4]
        assert side["loss"]["values"][2] is None  # "nan": a gap, not a number
    assert "val_loss" not in a and b["val_loss"]["values"] == [1.4, 2.4, 3.4, 4.4]

    names = {"a": "a/1", "b": "b/1"}
    for figure in ("loss", "grad", "val"):
        fig = plots.compare_figure(result["series"], figure, names, "en")
        plots.as_figure(fig)  # valid plotly
        drawn = {tr["name"].split(":")[0]: tr for tr in fig["data"]}
        assert set(drawn) == ({"B"} if figure == "val" else {"A", "B"}), figure
        assert all(len(tr["x"]) == 4 for tr in drawn.values())
    fig = plots.compare_figure(result["series"], "grad", names)
    assert [tr["line"]["dash"] for tr in fig["data"]] == [None, "dash"]  # told apart without colour too
    empty = plots.compare_figure({"a": {}, "b": {}}, "val", names, "ko")
    assert not empty["data"] and "두 실행" in empty["layout"]["annotations"][0]["text"]


def test_the_grids_line_up_by_prompt_kind(two_runs):
    grids = compare_runs(*two_runs)["grids"]
    assert grids["kinds"] == ["trigger", "no_trigger", "trigger_outfit"]  # A's order, then what only B has
    assert grids["a"]["steps"] == [0, 2] and grids["b"]["steps"] == [0, 2, 4]
    assert ("trigger_outfit" not in grids["a"]["kinds"]) and (4, "no_trigger") in grids["b"]["cells"]


def test_the_compare_endpoint_shows_the_difference_curves_and_both_grids(tmp_path, two_runs):
    gradio_client = pytest.importorskip("gradio_client")
    from tests.test_ui_flow import Api
    from ui.testing import running_app

    with running_app(tmp_path) as app:
        api = Api(app, gradio_client.Client(app.url, verbose=False))
        out = api("compare", compare_a="a/20260101-000000", compare_b="b/20260101-000000")
        rows = out["compare_diff"]["data"]
        assert ["optim.lr", "0.001", "0.0005"] in rows, rows
        assert "2 setting(s) differ" in out["compare_source"]
        assert out["compare_loss"]["type"] == "plotly"
        names = [tr["name"] for tr in json.loads(out["compare_loss"]["plot"])["data"]]
        assert any(n.startswith("A: a/") for n in names) and any(n.startswith("B: b/") for n in names)
        assert out["compare_grid_a"].count("<img") == 4 and out["compare_grid_b"].count("<img") == 9
        assert out["compare_grid_a"].count("<td>—</td>") == 2  # A has no "other outfit" column of its own
        refused = api("compare", compare_a="../../etc", compare_b="b/20260101-000000")
        assert "ld-error" in refused["compare_msg"]
