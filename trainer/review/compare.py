"""Two runs side by side: how their settings differ, their metric series, and their sample grids lined up by prompt.

The settings' difference is the run journal's when one run was started from the other (the journal wrote it when
the child began), else the difference of their two ``config.toml``. Nothing here draws: the app turns the result
into a table, overlaid curves and two grids.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from trainer.config.changes import WHERE_RUNS_GO, setting_changes
from trainer.review.grid import review_grid
from trainer.run.contents import load_run_config
from trainer.run.rundir import RunPaths, metrics

SERIES = ("loss", "grad_norm", "val_loss")  # the metrics compared, as metrics.jsonl names them


def compare_runs(run_a: str | Path, run_b: str | Path) -> dict[str, Any]:
    """``diff``: [(key, value in A, value in B)] by key, ``diff_source``: "journal" or "config"; ``series``:
    {"a"/"b": {name: {"steps": [...], "values": [...]}}} for each of :data:`SERIES` the run has (a non-finite
    value is None, a gap); ``grids``: {"kinds": every prompt column of either run, A's order first, "a"/"b": the
    run's :func:`~trainer.review.grid.review_grid`}."""
    a, b = Path(run_a), Path(run_b)
    diff, source = config_difference(a, b)
    grid_a, grid_b = review_grid(a), review_grid(b)
    kinds = list(dict.fromkeys([*grid_a["kinds"], *grid_b["kinds"]]))
    return {"a": str(a), "b": str(b), "diff": diff, "diff_source": source,
            "series": {"a": metric_series(a), "b": metric_series(b)},
            "grids": {"kinds": kinds, "a": grid_a, "b": grid_b}}


def config_difference(run_a: Path, run_b: Path) -> tuple[list[tuple[str, Any, Any]], str]:
    """Every setting that differs, as (key, value in A, value in B), and where that came from."""
    changes = _journal_changes(run_a, run_b)
    if changes is not None:
        return changes, "journal"
    diff = setting_changes(load_run_config(run_a), load_run_config(run_b))
    return [(k, va, vb) for k, (va, vb) in diff.items()], "config"


def _journal_changes(run_a: Path, run_b: Path) -> list[tuple[str, Any, Any]] | None:
    """The journal's changes when one run names the other as its parent (turned round when A is the child)."""
    for child, parent, flip in ((run_b, run_a, False), (run_a, run_b, True)):
        entry = _journal(child)
        named = entry.get("parent")
        if not named or not isinstance(entry.get("changes"), dict) or not _same(Path(named), parent):
            continue
        rows = []
        for key, pair in sorted(entry["changes"].items()):
            if key in WHERE_RUNS_GO or not isinstance(pair, list | tuple) or len(pair) != 2:
                continue
            before, after = pair
            rows.append((key, after, before) if flip else (key, before, after))
        return rows
    return None


def _journal(run: Path) -> dict[str, Any]:
    path = RunPaths(run).journal
    try:
        entry = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return entry if isinstance(entry, dict) else {}


def _same(p: Path, q: Path) -> bool:
    try:
        return p.resolve() == q.resolve()
    except OSError:
        return False


def metric_series(run: str | Path) -> dict[str, dict[str, list]]:
    """Each of :data:`SERIES` that some metrics row of ``run`` holds: its steps and values."""
    out: dict[str, dict[str, list]] = {}
    for row in metrics(run):
        step = row.get("step")
        if not isinstance(step, int | float):
            continue
        for name in SERIES:
            if name in row:
                series = out.setdefault(name, {"steps": [], "values": []})
                series["steps"].append(step)
                series["values"].append(_finite(row[name]))
    return out


def _finite(v: Any) -> float | None:
    """A metric as a float (JSON writes NaN and Inf as strings); None when absent or not finite."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
