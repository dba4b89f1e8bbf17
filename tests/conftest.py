"""Shared fixtures: tiny pictures built with PIL in a temp folder."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image


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
