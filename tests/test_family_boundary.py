"""Everything family-specific lives in the family adapters (``trainer/models/families/``) and the exporters
(``trainer/export/``): no other module calls a UNet, asks for the velocity, names a second text encoder or builds a
diffusers scheduler. Adding a family is then adding a file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("trainer/models/families/", "trainer/export/")
FAMILY_SPECIFIC = re.compile(
    r"\bunet\s*\("  # calling a UNet
    r"|get_velocity"  # the v-prediction target
    r"|text_encoder_[23]"  # SDXL's / SD3's further text encoders
    r"|\b[A-Z][A-Za-z0-9]*Scheduler\b"  # a diffusers noise scheduler class (DDPMScheduler, DDIMScheduler, ...)
)


def offending_lines(base: Path, folders: tuple[str, ...] = ("trainer", "ui")) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((base / folder).rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            if rel.startswith(ALLOWED):
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if FAMILY_SPECIFIC.search(line):
                    found.append(f"{rel}:{n}: {line.strip()}")
    return found


def test_family_specific_names_live_only_in_the_adapters_and_exporters():
    assert offending_lines(ROOT) == []


def test_the_check_sees_a_family_specific_line(tmp_path):
    (tmp_path / "trainer" / "models" / "families").mkdir(parents=True)
    (tmp_path / "ui").mkdir()
    call = "def f(pipe, x, t, h):\n    return pipe.unet(x, t, h).sample\n"
    (tmp_path / "trainer" / "models" / "families" / "mine.py").write_text(call, encoding="utf-8")  # allowed there
    (tmp_path / "trainer" / "loss.py").write_text(call, encoding="utf-8")
    (tmp_path / "ui" / "view.py").write_text("from diffusers import DDIMScheduler\n", encoding="utf-8")
    assert offending_lines(tmp_path) == ["trainer/loss.py:2: return pipe.unet(x, t, h).sample",
                                         "ui/view.py:1: from diffusers import DDIMScheduler"]
