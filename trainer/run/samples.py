"""Sample prompts and pictures: each prompt's kind, its name for people, and what lines a picture up with another step's."""

from __future__ import annotations

from typing import Any

from codes.prompts import PROMPT_KINDS
from trainer.message import Msg, msg

__all__ = ["PROMPT_KINDS", "expand_prompts", "prompt_kind", "sample_key"]  # PROMPT_KINDS: named here as before


def prompt_kind(kind: str) -> Msg:
    """A prompt kind for people (``kind.<kind>``); ``kind#3`` (two prompts of one kind) keeps its number, an unknown
    kind its id."""
    base, _, index = kind.partition("#")
    label = msg(f"kind.{base}") if base in PROMPT_KINDS else msg("kind.unknown", kind=base)
    return msg("kind.numbered", kind=label, index=index) if index else label


def expand_prompts(prompts: list[str], trigger: str) -> list[dict[str, Any]]:
    """``{trigger}`` filled in, and each prompt's kind (the default four by position, else by content)."""
    out = []
    for i, raw in enumerate(prompts):
        text = raw.replace("{trigger}", trigger).strip(" ,")
        has_trigger = "{trigger}" in raw or (bool(trigger) and trigger in raw)
        if i < len(PROMPT_KINDS) and (PROMPT_KINDS[i] == "no_trigger") != has_trigger:
            kind = PROMPT_KINDS[i]
        else:
            kind = "trigger" if has_trigger else "no_trigger"
        out.append({"index": i, "prompt": text, "kind": kind})
    return out


def sample_key(sample: dict[str, Any]) -> tuple[int, Any]:
    """A sample's prompt and seed: what lines it up with the same picture at another step."""
    return sample["index"], sample.get("seed")
