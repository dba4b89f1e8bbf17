"""The default demo run, trained once per test process for the files that only read it.

It is the run the app's Start trains on a fresh workspace, nothing changed (the demo dataset, prior scenes and the
starting values): about 2.5 minutes on 2 cores, the suite's largest single cost. ``SHARED_RUN_FILES`` are the files
that read it; ``tests/conftest.py`` hands them to one test process as one unit of work, so it is trained once.
``LORA_DOCTOR_DEFAULT_RUN=<run folder>`` adopts a finished run instead of training one, when its config is the
default's (paths and the run's name aside): for iterating on the pages, or on a machine too busy to train."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SHARED_RUN_FILES = ("test_browser_verdict.py", "test_demo_learning.py")


@pytest.fixture(scope="session")
def default_demo_run(tmp_path_factory) -> tuple[Path, Path]:
    """(workspace, run folder) of the default demo run, trained once for every file that reads it."""
    from trainer.train.loop import run_training
    from trainer.train.runner import Runner
    from ui.context import make_context
    from ui.fields import config_from_values

    workspace = tmp_path_factory.mktemp("ws")
    ctx = make_context(workspace, runner=Runner())  # the demo dataset, prior scenes and the starting values
    cfg = config_from_values(dict(ctx.defaults), ctx.runs_dir, [ctx.presets_dir])
    if os.environ.get("LORA_DOCTOR_DEFAULT_RUN"):
        return workspace, adopt(Path(os.environ["LORA_DOCTOR_DEFAULT_RUN"]), cfg)
    result = run_training(cfg)
    assert result.status == "finished", result
    return workspace, result.run_dir


def adopt(src: Path, cfg) -> Path:
    """A finished run of the default config, copied into the workspace, its paths made the workspace's."""
    from trainer.config.schema import from_dict, read_toml
    from trainer.io import atomic_write_text

    theirs = from_dict(read_toml(src / "config.toml"))
    paths = {"dataset": ("path", "reg_path"), "validation": ("path",), "save": ("output_dir", "name")}

    def settings(c) -> dict:
        d = c.to_dict()
        d.pop("preset", None)
        for section, keys in paths.items():
            for key in keys:
                d[section].pop(key)
        d["sample"]["prompts"] = [p.replace("{trigger}", c.dataset.trigger) for p in d["sample"]["prompts"]]
        return d

    assert settings(theirs) == settings(cfg), f"{src} was not trained with the default config"
    assert (src / "status.json").read_text().count('"finished"'), f"{src} did not finish"
    dest = Path(cfg.save.output_dir) / cfg.save.name / src.name
    shutil.copytree(src, dest)
    for section, keys in paths.items():
        for key in keys:
            setattr(getattr(theirs, section), key, getattr(getattr(cfg, section), key))
    atomic_write_text(dest / "config.toml", theirs.to_toml())
    return dest
