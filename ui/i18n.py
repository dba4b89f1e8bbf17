"""The UI's words in English and Korean (words/ui.py). ``t(key, lang, **values)``; a missing key is a KeyError
(tests check that every key the code uses exists in both languages)."""

from __future__ import annotations

import words
from trainer.run.samples import prompt_kind

LANGS = ("en", "ko")

# the app's words by key, without the "ui." of their code in words/ui.py
TEXTS: dict[str, tuple[str, str]] = {code.removeprefix("ui."): pair for code, pair in words.TEXTS.items()
                                     if code.startswith("ui.")}


def t(key: str, lang: str = "en", **values: object) -> str:
    return words.say(f"ui.{key}", lang, **values)


def signal_label(signal: str, lang: str) -> str:
    """A finding's or alert's signal id for people: the UI's own words, else the knowledge base's title."""
    if f"signal_{signal}" in TEXTS:
        return t(f"signal_{signal}", lang)
    from trainer.doctor.kb import load_kb

    entry = load_kb().signals.get(signal)
    return entry.text("title", lang) if entry is not None else signal


def kind_label(kind: str, lang: str) -> str:
    """A sample-prompt kind for people; ``kind#3`` (two prompts of one kind) keeps its number."""
    return words.say(prompt_kind(kind), lang)
