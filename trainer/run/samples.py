"""Sample prompts and pictures: each prompt's kind, its words, and what lines a picture up with another step's."""

from __future__ import annotations

from typing import Any

PROMPT_KINDS = ("trigger", "trigger_unseen", "trigger_outfit", "no_trigger")


# What each kind is called where people read it (English, Korean); the UI's words take these too.
PROMPT_KIND_WORDS = {
    "trigger": ("trigger only", "트리거만"),
    "trigger_unseen": ("trigger + unseen pose/background", "트리거 + 새 자세/배경"),
    "trigger_outfit": ("trigger + other outfit", "트리거 + 다른 옷"),
    "no_trigger": ("no trigger", "트리거 없음"),
}


def kind_words(kind: str, lang: str) -> str:
    """A prompt kind for people; ``kind#3`` (two prompts of one kind) keeps its number, an unknown kind its id."""
    base, _, index = kind.partition("#")
    en, ko = PROMPT_KIND_WORDS.get(base, (base, base))
    label = ko if lang == "ko" else en
    return f"{label} #{index}" if index else label


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
