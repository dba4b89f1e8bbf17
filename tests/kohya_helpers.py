"""Shared by the kohya import/export tests: kohya-shaped dataset folders and the example configs in
tests/data/kohya (written with the key names and value shapes kohya_ss and sd-scripts use)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from PIL import Image

DATA = Path(__file__).resolve().parent / "data" / "kohya"


def pictures(folder: Path, n: int, size: tuple[int, int] = (512, 512), start: int = 0) -> None:
    """``n`` distinct pictures with captions (distinct pixels, or the scan rightly skips duplicates)."""
    folder.mkdir(parents=True, exist_ok=True)
    shade = sum(map(ord, folder.name)) % 200
    for i in range(start, start + n):
        Image.new("RGB", size, (i * 23 % 256, shade, (i * 7 + size[0]) % 256)).save(folder / f"{i}.png")
        (folder / f"{i}.txt").write_text(f"zxc girl, picture {i}")


def kohya_dataset(root: Path) -> Path:
    """``img/10_zxc girl`` (3 pictures) and ``img/5_zxc portrait`` (2): 40 picture-repeats, one 512² bucket."""
    img = root / "img"
    pictures(img / "10_zxc girl", 3)
    pictures(img / "5_zxc portrait", 2)
    return img


def gui_json(tmp: Path, img: Path, **changes) -> Path:
    """The example kohya_ss GUI config pointed at ``img``, with ``changes``, saved as the GUI saves it."""
    data = json.loads((DATA / "kohya_ss_lora.json").read_text())
    data.update(train_data_dir=str(img), output_dir=str(tmp / "out"), **changes)
    path = tmp / "kohya_ss.json"
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2))
    return path


def sd_files(tmp: Path, img: Path) -> tuple[Path, Path]:
    """The example sd-scripts config and dataset config, their image_dirs under ``img``."""
    ds = tmp / "dataset_config.toml"
    ds.write_text((DATA / "dataset_config.toml").read_text().replace('"IMG/', f'"{img.as_posix()}/'))
    cfg = tmp / "sd_config.toml"
    cfg.write_text((DATA / "sd_config.toml").read_text().replace('"dataset_config.toml"', f'"{ds.as_posix()}"'))
    return cfg, ds


def preset_run(tmp_path: Path, preset: str, base: str, **lora):
    """The preset's config on ``base``, trained on the kohya dataset with trigger zxc, with ``lora`` settings."""
    from trainer.config.presets import preset_config

    cfg = preset_config(preset)
    cfg.model.base = base
    cfg.dataset.path = str(kohya_dataset(tmp_path))
    cfg.dataset.trigger = "zxc"
    for k, v in lora.items():
        setattr(cfg.lora, k, v)
    return cfg


def export_args(tmp_path: Path, cfg):
    """(sd-scripts' arguments, the command line, the report) of exporting ``cfg`` into ``tmp_path / "sd"``."""
    from trainer.config.schema import save_config
    from trainer.kohya.exporter import export_kohya

    save_config(cfg, tmp_path / "ours.toml")
    files, command, report = export_kohya(tmp_path / "ours.toml", tmp_path / "sd")
    return tomllib.loads(files["config"].read_text()), command, report
