"""Every problem a dataset file can have: a stable kind, its severity, and whether the file is left out; what to do
about it is the message ``problem.<kind>`` (worded in ``words/data.py``)."""

from __future__ import annotations

from typing import Any

from trainer.message import Msg, msg

# kind → (severity, excluded). "error" files are never trained on; "warning" ones are but the user should look;
# "info" is handled automatically and only noted. Stable ids: the UI keys off them.
PROBLEM_KINDS: dict[str, tuple[str, bool]] = {
    "zero_byte": ("error", True),
    "not_an_image": ("error", True),
    "unreadable_image": ("error", True),
    "decompression_bomb": ("error", True),
    "too_small": ("error", True),
    "unsupported_format": ("warning", True),
    "duplicate": ("warning", True),
    "near_copy": ("warning", False),
    "zero_repeats": ("warning", True),
    "mask_files": ("info", True),
    "high_repeats": ("warning", False),
    "low_resolution": ("warning", False),
    "extreme_aspect": ("warning", False),
    "missing_caption": ("warning", False),
    "empty_caption": ("warning", False),
    "caption_not_utf8": ("warning", False),
    "no_trigger": ("warning", False),
    "animated": ("info", False),
    "cmyk": ("info", False),
    "high_bit_depth": ("info", False),
    "alpha_channel": ("info", False),
    "no_mask": ("info", False),
    "exif_rotated": ("info", False),
}


def problem(kind: str, rel: str, **values: Any) -> dict[str, Any]:
    """One problem of file ``rel``: its ``message`` is :class:`Msg` ``problem.<kind>`` filled with ``values``."""
    severity, excluded = PROBLEM_KINDS[kind]
    return {"file": rel, "kind": kind, "severity": severity, "excluded": excluded, "message": Msg(f"problem.{kind}", values)}


def tag_weld(tag: str, pct: int) -> Msg:
    return msg("problem.tag_weld", tag=tag, pct=pct)
