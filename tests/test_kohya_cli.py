"""``import-kohya`` / ``export-kohya`` from the command line: the report, the files, and exit code 2 with one
line for a file that is not a kohya LoRA config."""

from __future__ import annotations

import json
import tomllib

from kohya_helpers import DATA, gui_json, kohya_dataset
from test_cli import cli, one_error_line


def test_import_prints_the_report_and_writes_our_config(tmp_path):
    path = gui_json(tmp_path, kohya_dataset(tmp_path))
    out = tmp_path / "ours.toml"
    proc = cli("import-kohya", str(path), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Carried over:" in proc.stdout and "network_dim = 16 → lora.rank = 16" in proc.stdout
    assert "Step count: kohya 40, LoRA Doctor 40 (the same)" in proc.stdout
    cfg = tomllib.loads(out.read_text())
    assert cfg["lora"]["rank"] == 16 and cfg["train"]["epochs"] == 4
    proc = cli("import-kohya", str(path), "-o", str(out), "--json", "--no-steps")
    report = json.loads(proc.stdout)
    assert report["kind"] == "gui" and report["config"] == str(out) and report["steps"] == {}
    assert {"key": "network_dim", "ours": "lora.rank", "our_value": 16}.items() <= next(
        e for e in report["entries"] if e["key"] == "network_dim").items()
    proc = cli("import-kohya", str(path), "-o", str(out), "--lang", "ko", "--no-steps")
    assert "옮긴 설정" in proc.stdout


def test_export_writes_sd_scripts_files_and_the_command(tmp_path):
    path = gui_json(tmp_path, kohya_dataset(tmp_path))
    ours = tmp_path / "ours.toml"
    assert cli("import-kohya", str(path), "-o", str(ours), "--no-steps").returncode == 0
    proc = cli("export-kohya", str(ours), "-o", str(tmp_path / "sd"))
    assert proc.returncode == 0, proc.stderr
    assert "accelerate launch train_network.py --config_file" in proc.stdout
    assert tomllib.loads((tmp_path / "sd" / "sd_config.toml").read_text())["network_dim"] == 16
    assert "lora.targets" in proc.stdout  # what sd-scripts cannot take is listed too


def test_foreign_files_are_one_line_and_exit_2(tmp_path):
    line = one_error_line(cli("import-kohya", str(DATA / "comfyui_workflow.json"), "-o", str(tmp_path / "c.toml")))
    assert "comfyui_workflow.json is a ComfyUI workflow" in line
    flux = tmp_path / "flux.json"
    flux.write_text(json.dumps({**json.loads((DATA / "kohya_ss_lora.json").read_text()), "flux1_checkbox": True,
                                "LoRA_type": "Flux1 OFT"}))
    assert "Flux.1 OFT" in one_error_line(cli("import-kohya", str(flux), "-o", str(tmp_path / "c.toml")))
    cut = tmp_path / "cut.json"
    cut.write_text((DATA / "kohya_ss_lora.json").read_text()[:500])
    assert "cut.json is not valid JSON" in one_error_line(cli("import-kohya", str(cut), "-o", str(tmp_path / "c.toml")))
    assert "without config.toml" in one_error_line(cli("export-kohya", str(tmp_path), "-o", str(tmp_path / "x")))
    assert not (tmp_path / "c.toml").exists()
