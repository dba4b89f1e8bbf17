"""What one run changed against another: the settings that differ, less where the runs are written."""

from __future__ import annotations

from typing import Any

from trainer.config.schema import Config, diff_configs

WHERE_RUNS_GO = ("save.output_dir",)  # where a workspace puts its runs, not how they train


def setting_changes(a: Config, b: Config) -> dict[str, tuple[Any, Any]]:
    """:func:`~trainer.config.schema.diff_configs` less where the runs are written (:data:`WHERE_RUNS_GO`): what one
    run changed against another, as the journal, the parent comparison and Compare two runs count it."""
    return {k: v for k, v in diff_configs(a, b).items() if k not in WHERE_RUNS_GO}
