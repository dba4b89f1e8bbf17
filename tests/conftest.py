"""Shared fixtures: tiny pictures built with PIL in a temp folder.

test.sh runs the suite in two processes (pytest-xdist, one test file per process at a time): each takes one of
the machine's threads, as two torch processes with two threads each slow each other far more than twice."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import words  # noqa: F401  the app and the CLI word the library's messages with words/ (codes.wording); so do tests
from tests.default_run import SHARED_RUN_FILES, default_demo_run  # noqa: F401  the fixture, for every file

if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"  # and the subprocesses tests start
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def wizard_api(tmp_path_factory):
    """``api(name, **inputs) -> {output: value}``: the wizard's named endpoints on a running app of its own (one per
    test file), called through gradio_client as a browser's requests are."""
    gradio_client = pytest.importorskip("gradio_client")
    from ui.testing import call, running_app

    with running_app(tmp_path_factory.mktemp("ws")) as app:
        client = gradio_client.Client(app.url, verbose=False)
        yield lambda name, **kw: call(client, app.ctx, name, **kw)


@pytest.fixture
def make_image() -> Callable[..., Path]:
    """``make_image(path, size=(64, 64), mode="RGB", caption=None, fmt=None, **save_kw) -> Path``.

    Every call makes different pixels (a counter in one corner), so pictures are never accidental
    duplicates. ``caption`` (str) writes ``<stem>.txt`` next to it.
    """
    counter = itertools.count(1)

    def make(
        path: str | Path,
        size: tuple[int, int] = (64, 64),
        mode: str = "RGB",
        caption: str | None = None,
        fmt: str | None = None,
        **save_kw: Any,
    ) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        i = next(counter)
        base = Image.new("RGB", size, ((i * 67) % 256, (i * 131) % 256, (i * 29 + 7) % 256))
        base.putpixel((0, 0), (i % 256, (i // 256) % 256, 255))
        img = base if mode == "RGB" else base.convert(mode)
        img.save(path, format=fmt, **save_kw)
        if caption is not None:
            path.with_suffix(".txt").write_text(caption, encoding="utf-8")
        return path

    return make


# The longest files start first, so that in two processes neither is left with one of them at the end (measured:
# pytest --durations; each is minutes of training on two cores).
LONGEST_FIRST = (*SHARED_RUN_FILES, "test_doctor_own_folder.py", "test_distributed.py", "test_browser.py",
                 "test_browser_compare.py")


def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, but the files that read the default demo run are one unit of work: one process runs
    them one after the other and trains the run once (``tests/default_run.py``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedRunFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return "default demo run" if scope.rsplit("/", 1)[-1] in SHARED_RUN_FILES else scope

    return SharedRunFirst(config, log)
