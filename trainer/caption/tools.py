"""Caption chores across a whole dataset, the ones people do in BooruDatasetTagManager or by hand: how often each
tag or word is written, remove or replace a tag everywhere, put the trigger where it is missing, find captions by
word. Every edit goes through the journal (:func:`trainer.caption.journal.apply_changes`), so Undo takes it back."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from trainer.caption.compose import tidy
from trainer.caption.journal import ChangeSet, apply_changes
from trainer.caption.run import Picture, pictures_of
from trainer.data.scan import contains_trigger, split_tags
from trainer.errors import UserError
from trainer.message import msg

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def same_tag(a: str, b: str) -> bool:
    """Tags compare as people read them: any case, any spacing, ``red_hat`` = ``red hat``."""
    def norm(s: str) -> str:
        return " ".join(s.replace("_", " ").lower().split())

    return norm(a) == norm(b)


def frequency(pictures: list[Picture], by: str = "tag") -> list[tuple[str, int, float]]:
    """``(tag or word, captions holding it, share of captions)``, most written first; each counted once per
    caption. ``by="word"`` splits sentences into lower-case words (Florence-2 and BLIP write sentences)."""
    captions = [p.old for p in pictures if p.old]
    counts: Counter[str] = Counter()
    for c in captions:
        counts.update({w.lower() for w in _WORD.findall(c)} if by == "word" else {t.lower() for t in split_tags(c)})
    n = max(1, len(captions))
    return [(k, v, v / n) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def find(pictures: list[Picture], words: str) -> list[Picture]:
    """The pictures whose caption holds ``words`` as whole words (any case)."""
    words = " ".join(words.split())
    if not words:
        return []
    return [p for p in pictures if p.old and contains_trigger(p.old, words)]


def replace_tag(root: str | Path, tag: str, new: str = "", caption_ext: str = ".txt") -> ChangeSet | None:
    """Replace the tag ``tag`` by ``new`` in every caption (``new`` empty: remove it); a caption that would then
    hold ``new`` twice keeps one. None when no caption holds ``tag``."""
    tag, new = " ".join(tag.split()), tidy(new)
    if not tag:
        raise UserError(msg("caption.error.no_tag"))
    folder, pictures = pictures_of(root, caption_ext)
    change = {}
    for p in pictures:
        tags = split_tags(p.old)
        if not any(same_tag(t, tag) for t in tags):
            continue
        out: list[str] = []
        for t in tags:
            piece = new if same_tag(t, tag) else t
            if piece and not any(same_tag(piece, o) for o in out):
                out.append(piece)
        change[p.caption_path] = ", ".join(out)
    what = msg("caption.change.replace", tag=tag, new=new) if new else msg("caption.change.remove", tag=tag)
    return apply_changes(folder, change, what)


def insert_trigger(root: str | Path, trigger: str, caption_ext: str = ".txt") -> ChangeSet | None:
    """Put ``trigger`` first in every caption: where it lacks it (a picture without a caption gets the trigger
    alone), and where a later tag is the trigger (training keeps the first tags in place and shuffles or drops the
    rest, so a trigger written last moves and goes missing). A trigger inside a longer tag ("a photo of zxc") is
    left where it is."""
    trigger = " ".join(trigger.split())
    if not trigger:
        raise UserError(msg("caption.error.no_trigger"))
    folder, pictures = pictures_of(root, caption_ext)
    change = {}
    for p in pictures:
        tags = split_tags(p.old)
        if not (p.old and contains_trigger(p.old, trigger)):
            change[p.caption_path] = ", ".join([trigger, *tags])
        elif any(same_tag(t, trigger) for t in tags[1:]) and not same_tag(tags[0], trigger):
            change[p.caption_path] = ", ".join([trigger, *(t for t in tags if not same_tag(t, trigger))])
    return apply_changes(folder, change, msg("caption.change.trigger", trigger=trigger))
