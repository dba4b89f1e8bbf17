"""The headless CLI's contract: JSON outputs and exit codes (0 ok, 2 bad input with one clear line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainer", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def one_error_line(proc) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith(("[transformers]", "WARNING"))]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, lines
    return lines[0]


def make_set(root: Path, folder: str, n: int, size=(512, 512)) -> None:
    d = root / folder
    d.mkdir(parents=True)
    shade = sum(map(ord, folder)) % 256  # distinct pixels per folder, or the scan rightly calls them duplicates
    for i in range(n):
        Image.new("RGB", size, (i * 20 % 256, 100, shade)).save(d / f"{i}.png")
        (d / f"{i}.txt").write_text(f"zxc, image {i}")


def test_plan_json_counts_kohya_folders(tmp_path):
    make_set(tmp_path / "data", "10_zxc girl", 12)
    make_set(tmp_path / "data", "5_zxc style", 4)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[dataset]\npath = "{tmp_path / "data"}"\nresolution = 512\n[train]\nbatch_size = 2\n'
                   "epochs = 3\ngrad_accum = 1\n")
    proc = cli("plan", str(cfg), "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["images"] == 16 and plan["image_repeats"] == 140 and plan["total_steps"] == 210
    assert plan["steps_per_epoch"] == 70 and plan["dose_zone"] in ("under", "fit", "over") and plan["dose"] > 0
    proc = cli("plan", str(cfg), "--json", "--set", "train.max_steps=50")
    assert json.loads(proc.stdout)["total_steps"] == 50


def test_a_preset_file_works_as_the_config(tmp_path):
    make_set(tmp_path / "data", "10_zxc", 4)
    proc = cli("plan", "presets/sd15-character.toml", "--json", "--set", f"dataset.path={tmp_path / 'data'}")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    from trainer.config.presets import preset_config

    preset = preset_config("sd15-character")
    assert plan["batch_size"] == preset.train.batch_size and plan["image_repeats"] == 40


def test_check_dataset_reports_one_problem_per_bad_file(tmp_path):
    d = tmp_path / "set"
    d.mkdir()
    for i in range(3):
        Image.new("RGB", (512, 512), (i * 60, 20, 200)).save(d / f"good{i}.png")
        (d / f"good{i}.txt").write_text("zxc, good")
    Image.new("RGB", (512, 512), (9, 9, 9)).save(d / "whole.jpg")
    (d / "truncated.jpg").write_bytes((d / "whole.jpg").read_bytes()[:600])
    (d / "whole.jpg").unlink()
    (d / "truncated.txt").write_text("zxc")
    (d / "empty.png").write_bytes(b"")
    (d / "empty.txt").write_text("zxc")
    (d / "notes.png").write_text("this is text")
    (d / "notes.txt").write_text("zxc")
    Image.new("RGB", (1, 1)).save(d / "dot.png")
    (d / "dot.txt").write_text("zxc")
    Image.new("RGB", (512, 512), (200, 20, 20)).save(d / "nocaption.png")
    proc = cli("check-dataset", str(d), "--json", "--trigger", "zxc")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    by_file = {}
    for p in report["problems"]:
        by_file.setdefault(p["file"], []).append(p["kind"])
    assert by_file == {"truncated.jpg": ["unreadable_image"], "empty.png": ["zero_byte"], "notes.png": ["not_an_image"],
                       "dot.png": ["too_small"], "nocaption.png": ["missing_caption"]}
    assert report["usable"] is True and report["images"] == 4 and report["captions"] == 3
    assert report["buckets"] and "zxc" in report["tags"]


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_check_dataset_bad_folder_exits_2(tmp_path, make):
    target = tmp_path / "nothing"
    if make == "empty":
        target.mkdir()
    line = one_error_line(cli("check-dataset", str(target), "--json"))
    assert str(target) in line


@pytest.mark.parametrize(("body", "key"), [("[lora]\nrank = 0\n", "lora.rank"), ("[model]\nbsae = 'x'\n", "model.bsae")])
def test_bad_config_exits_2_naming_the_key(tmp_path, body, key):
    cfg = tmp_path / "c.toml"
    cfg.write_text(body)
    for command in ("plan", "train"):
        assert key in one_error_line(cli(command, str(cfg)))


def test_missing_config_file_exits_2(tmp_path):
    assert "not found" in one_error_line(cli("plan", str(tmp_path / "none.toml")))


@pytest.mark.parametrize("single", [False, True])
def test_tiny_model_command_writes_a_loadable_model(tmp_path, single):
    args = ["tiny-model", "sd15", str(tmp_path / "m")] + (["--single-file"] if single else [])
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    from trainer.config.schema import ModelConfig
    from trainer.models.base import load_pipeline

    target = tmp_path / "m" / "model.safetensors" if single else tmp_path / "m"
    _, info = load_pipeline(ModelConfig(base=str(target)))
    assert info.family == "sd15" and info.kind == ("single_file" if single else "folder")


def test_a_training_run_prints_no_library_noise(tmp_path):
    """A short run with a sampling at its end, as a user starts it: the console carries the run's own lines, not the
    libraries' warnings that nobody can act on (trainer/noise.py; the SD 1.5 sampling copy keeps its settings)."""
    from tests.helpers import tiny_config, write_toy_dataset

    cfg = tiny_config(write_toy_dataset(tmp_path / "data", n=4), tmp_path / "runs",
                      {"train.max_steps": 2, "sample.enabled": True, "sample.every_steps": 2})
    (tmp_path / "cfg.toml").write_text(cfg.to_toml())
    proc = cli("train", str(tmp_path / "cfg.toml"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert list((tmp_path / "runs").rglob("samples/step-000002/*.png")), "no sampling ran: nothing was tested"
    for noise in ("requires torchvision", "safety checker", "kept in float32: []", "kernels-community"):
        assert noise not in proc.stderr, proc.stderr[-3000:]
