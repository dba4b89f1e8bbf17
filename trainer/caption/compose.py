"""What a captioner's answer becomes in a caption file: tidied, the words to leave out taken out, the trigger first,
and merged with the caption already there (fill, overwrite or append). Pure text functions, tested alone."""

from __future__ import annotations

import re
from typing import Literal

from trainer.data.scan import contains_trigger, split_tags

Mode = Literal["fill", "overwrite", "append"]
MODES: tuple[Mode, ...] = ("fill", "overwrite", "append")

# Openings Florence-2 and BLIP put before nearly every caption: a word in every caption says nothing to train on
# (and BLIP-large's "arafed" is a known artefact of its training captions, not a word).
_LEAD_INS = re.compile(r"^(the|this|in this) (image|picture|photo|photograph)( is| shows| features| depicts)?"
                       r"( an? (image|picture|photo|photograph|close-up) of)?[\s,:]+", re.IGNORECASE)
_ARTEFACTS = re.compile(r"\b(arafed|araffe|arafe|there is|there are)\b\s*", re.IGNORECASE)


def tidy(text: str) -> str:
    """Spaces collapsed, empty tags and stray commas gone: ``"a,, b ,"`` → ``"a, b"``."""
    return ", ".join(split_tags(text))


def tidy_model_caption(text: str) -> str:
    """A captioner's answer without its stock opening ("The image shows") and known artefacts; its first letter
    lower-cased when it was a sentence's capital (a caption is a list of what is in the picture)."""
    text = " ".join(text.split())
    text = _ARTEFACTS.sub("", _LEAD_INS.sub("", text)).strip()
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return tidy(text)


def parse_words(text: str) -> list[str]:
    """The "leave out" box (commas or new lines between phrases) as phrases."""
    return [w for w in (" ".join(p.split()) for p in re.split(r"[,\n]", text or "")) if w]


def _phrase(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)", re.IGNORECASE)


def leave_out(text: str, phrases: list[str]) -> str:
    """``text`` with every phrase of ``phrases`` taken out (whole words, any case): a tag that is only the phrase
    goes, a sentence loses the words. What the trigger should absorb (the subject's fixed look) is not written."""
    parts = []
    for part in split_tags(text):
        for p in phrases:
            part = _phrase(p).sub("", part)
        part = re.sub(r"\s+([.;:])", r"\1", " ".join(part.split())).strip(" .;:")
        part = re.sub(r"\b(a|an|the|with|and|of)$", "", part, flags=re.IGNORECASE).strip()
        if part:
            parts.append(part)
    return ", ".join(parts)


def trigger_first(text: str, trigger: str) -> str:
    """``trigger`` as the first tag (where ``keep_tokens`` keeps it when tags are shuffled), and only there."""
    if not trigger:
        return tidy(text)
    rest = [t for t in split_tags(text) if t.lower() != trigger.lower()]
    return ", ".join([trigger, *rest])


def merge(old: str, new: str, mode: Mode) -> str:
    """The caption a picture ends with: ``new`` in place of ``old`` (overwrite), only where there was none (fill),
    or ``old`` followed by the tags of ``new`` it lacks (append)."""
    if mode == "overwrite" or not old.strip():
        return tidy(new)
    if mode == "fill":
        return old
    have = {t.lower() for t in split_tags(old)}
    return ", ".join([*split_tags(old), *(t for t in split_tags(new) if t.lower() not in have)])


def final_caption(old: str, raw: str, mode: Mode, trigger: str = "", exclude: list[str] | None = None) -> str:
    """The whole recipe for one picture: tidy the model's answer, leave out ``exclude``, merge with ``old`` by
    ``mode``, trigger first. In fill mode an existing caption is kept exactly as it is."""
    if mode == "fill" and old.strip():
        return old
    keep = [p for p in exclude or [] if not (trigger and contains_trigger(p, trigger))]  # never the trigger
    new = leave_out(tidy_model_caption(raw), keep)
    return trigger_first(merge(old, new, mode), trigger)
