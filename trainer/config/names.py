"""Run names and the config files they own: ``<configs>/<name>.toml`` (written on each Start) and the runs under
``<runs>/<name>/``. A name belongs to the dataset its files were written for; another dataset takes a free one
instead of overwriting them. Names here are already file names (the app makes them so, ``ui.paths.safe_name``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

MAX_TRIES = 1000


def dataset_of(config_file: Path) -> str | None:
    """``dataset.path`` of a written config (resolved); None when the file is absent, unreadable or names none."""
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    path = (data.get("dataset") or {}).get("path") if isinstance(data.get("dataset"), dict) else None
    return _resolved(path) if isinstance(path, str) and path else None


def _resolved(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


def owners(name: str, configs_dir: Path, runs_dir: Path | None = None) -> dict[Path, str]:
    """Every file under this run name that says which dataset it was written for: the config file, and each
    run's resolved config."""
    files = [configs_dir / f"{name}.toml"]
    if runs_dir is not None and (runs_dir / name).is_dir():
        files += sorted((runs_dir / name).glob("*/config.toml"))
    out = {}
    for f in files:
        owner = dataset_of(f)
        if owner is not None:
            out[f] = owner
    return out


def clash(name: str, dataset_path: str, configs_dir: Path, runs_dir: Path | None = None) -> tuple[Path, str] | None:
    """(the file, its dataset) when this name's files belong to another dataset, the config file first; None
    when the name is free or already this dataset's."""
    mine = _resolved(dataset_path) if dataset_path else ""
    for f, owner in owners(name, configs_dir, runs_dir).items():
        if owner != mine:
            return f, owner
    return None


def free_run_name(base: str, dataset_path: str, configs_dir: Path, runs_dir: Path | None = None) -> str:
    """``base`` when its files are free or this dataset's, else ``base-2``, ``base-3``, … the first that is."""
    for i in range(1, MAX_TRIES):
        name = base if i == 1 else f"{base}-{i}"
        if clash(name, dataset_path, configs_dir, runs_dir) is None:
            return name
    return f"{base}-{MAX_TRIES}"
