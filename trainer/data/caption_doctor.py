"""The caption doctor: what is wrong with the captions as a whole, each finding with what to do.

The training guide is precise about captions: write what should stay changeable (pose, background, clothing to
swap) and leave out what the trigger should absorb (the subject's fixed look), because a word written in every
caption is learnt by that word, not by the trigger. The checks:

- ``caption_everywhere`` (warning): a tag, or a phrase of two or more words, in nearly every caption;
  ``caption_word_everywhere`` (note): one word in nearly every caption inside tags that vary ("hat" in "wearing a
  red hat" / "... blue hat"): fine when it should stay changeable.
- ``trigger_not_first`` (warning): with tags shuffled or dropped, ``keep_tokens`` keeps the first tags in place;
  a caption whose trigger is not among them loses it from its place, or drops it.
- ``identical_captions`` (warning): different pictures with the same caption teach nothing about what differs.
- ``caption_too_long`` (warning): CLIP reads 75 tokens; the rest is cut, and the message says what.
- ``trigger_common_word`` (warning): a trigger the base already knows as an ordinary word.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Any

from trainer.errors import UserError
from trainer.message import Msg, msg

NEARLY_ALL = 0.9
MIN_CAPTIONS = 3  # with one or two captions every word is "in all of them"; that says nothing
CLIP_TOKENS = 75  # 77 positions less the start and end tokens (trainer/models/conditioning.py truncates there)
COMMON_TOKEN_ID = 20_000
"""CLIP's BPE ids follow merge order, so the frequent words come first: a trigger word that is one token with an
id below this is an everyday word (cat 2368, girl 1611, lisa 7424) the base draws already; rare single tokens
such as "sks" (48136) and "ohwx" (47993) or split ones such as "zxc" (z + xc) are not."""
MAX_PHRASE_WORDS = 6
SHARED_SHARE = 0.1
"""A caption on this share of the pictures (and at least three) is a warning: the pictures cannot all be alike."""
STOPWORDS = frozenset({
    "a", "an", "the", "of", "on", "in", "at", "to", "with", "and", "or", "is", "are", "was", "were", "be", "been",
    "being", "this", "that", "these", "those", "it", "its", "there", "here", "for", "from", "by", "as", "into",
    "onto", "over", "under", "up", "down", "his", "her", "their", "our", "your", "my", "some", "any", "one", "two",
    "very"})
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def finding(kind: str, severity: str, files: list[str], message: Msg) -> dict[str, Any]:
    """One finding, shaped like a scan problem (its ``file`` is a short list of the captions it is about)."""
    shown = ", ".join(files[:3]) + (f" (+{len(files) - 3})" if len(files) > 3 else "")
    return {"file": shown, "kind": kind, "severity": severity, "excluded": False, "files": files, "message": message}


def check_captions(captions: dict[str, str], trigger: str = "", keep_tokens: int = 1,
                   shuffled: bool = False) -> list[dict[str, Any]]:
    """Every finding about ``captions`` (picture → its caption text) for a dataset with this trigger; ``shuffled``:
    tags are shuffled or dropped while training, so ``keep_tokens`` decides what stays first."""
    out = everywhere(captions, trigger)
    if trigger and keep_tokens >= 1 and shuffled:
        out += trigger_not_first(captions, trigger, keep_tokens)
    out += identical(captions)
    out += too_long(captions)
    if trigger:
        out += common_trigger(trigger)
    return out


def caption_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def caption_tags(text: str) -> list[str]:
    return [t for t in (" ".join(p.split()).lower() for p in text.split(",")) if t]


def _phrases(text: str) -> set[str]:
    """Runs of 1..MAX_PHRASE_WORDS words within one tag that neither start nor end on a stopword."""
    out = set()
    for tag in caption_tags(text):
        words = caption_words(tag)
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + MAX_PHRASE_WORDS) + 1):
                if words[i] not in STOPWORDS and words[j - 1] not in STOPWORDS:
                    out.add(" ".join(words[i:j]))
    return out


def everywhere(captions: dict[str, str], trigger: str = "") -> list[dict[str, Any]]:
    """Tags and phrases in nearly every caption, the longest of each overlapping group only."""
    n = len(captions)
    if n < MIN_CAPTIONS:
        return []
    trigger_words = set(caption_words(trigger))
    tags: Counter[str] = Counter()
    phrases: Counter[str] = Counter()
    for text in captions.values():
        tags.update(set(caption_tags(text)))
        phrases.update(_phrases(text))

    def common(counter: Counter[str]) -> dict[str, int]:
        return {k: c for k, c in counter.items() if c / n >= NEARLY_ALL and not set(caption_words(k)) <= trigger_words}

    whole = common(tags)
    parts = {p: c for p, c in common(phrases).items() if not any(re.search(rf"\b{re.escape(p)}\b", t) for t in whole)}
    longest = {p: c for p, c in parts.items()
               if not any(p != q and re.search(rf"\b{re.escape(p)}\b", q) for q in parts)}
    out = []
    notes: dict[tuple[str, ...], list[str]] = defaultdict(list)  # the varying tags → the words always in them
    for phrase, c in sorted({**whole, **longest}.items(), key=lambda kv: (-kv[1], kv[0])):
        pct = round(100 * c / n)
        if phrase in whole or len(caption_words(phrase)) > 1:
            files = [rel for rel, text in captions.items() if re.search(rf"\b{re.escape(phrase)}\b", text.lower())]
            out.append(finding("caption_everywhere", "warning", files,
                               msg("caption.doctor.everywhere", phrase=phrase, pct=pct)))
        else:  # one word inside tags that differ: the tags vary, so the word can stay changeable
            holding = tuple(sorted({t for text in captions.values() for t in caption_tags(text)
                                    if re.search(rf"\b{re.escape(phrase)}\b", t)}))
            notes[holding].append(phrase)
    for holding, ws in notes.items():
        out.append(finding("caption_word_everywhere", "info", [], msg(
            "caption.doctor.word_everywhere", word=", ".join(ws), examples="; ".join(holding[:3]))))
    return out


def trigger_not_first(captions: dict[str, str], trigger: str, keep_tokens: int) -> list[dict[str, Any]]:
    t = trigger.lower().strip()
    late = [rel for rel, text in captions.items()
            if t in caption_tags(text) and t not in caption_tags(text)[:keep_tokens]]
    if not late:
        return []
    return [finding("trigger_not_first", "warning", late,
                    msg("caption.doctor.trigger_not_first", trigger=trigger, n=len(late), keep=keep_tokens))]


def identical(captions: dict[str, str]) -> list[dict[str, Any]]:
    """A caption shared by many pictures is a warning (the lazy "every caption is the trigger" dataset); a few
    pairs here and there are one note: pictures of one scene and pose may well read the same."""
    groups: dict[str, list[str]] = defaultdict(list)
    for rel, text in captions.items():
        groups[", ".join(caption_tags(text))].append(rel)
    many = max(3, round(SHARED_SHARE * len(captions)))
    out = [finding("identical_captions", "warning", files, msg("caption.doctor.identical", n=len(files),
                                                               caption=text[:120]))
           for text, files in groups.items() if len(files) >= many and text]
    few = [files for text, files in groups.items() if 1 < len(files) < many and text]
    if few:
        out.append(finding("identical_captions", "info", [f for files in few for f in files],
                           msg("caption.doctor.identical_few", groups=len(few))))
    return out


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    from trainer.models.tokenizer import clip_tokenizer

    return clip_tokenizer(model_max_length=1_000_000)  # counts a long caption without transformers' warning


def too_long(captions: dict[str, str]) -> list[dict[str, Any]]:
    """Captions over CLIP's 75 tokens, each with the words that are cut."""
    try:
        tok = _tokenizer()
    except UserError:  # the CLIP vocabulary's package is missing: the setup says so itself; this check waits for it
        return []
    out = []
    for rel, text in captions.items():
        ids = tok(text, add_special_tokens=False).input_ids
        if len(ids) > CLIP_TOKENS:
            cut = re.sub(r"\s+([,.;:!?])", r"\1", tok.decode(ids[CLIP_TOKENS:])).strip()
            out.append(finding("caption_too_long", "warning", [rel], msg(
                "caption.doctor.too_long", n=len(ids), limit=CLIP_TOKENS, cut=cut if len(cut) <= 160 else cut[:159] + "…")))
    return out


def common_trigger(trigger: str) -> list[dict[str, Any]]:
    """A trigger every word of which is an everyday word of CLIP's vocabulary."""
    try:
        tok = _tokenizer()
    except UserError:
        return []
    words = caption_words(trigger)
    if not words:
        return []
    for w in words:
        ids = tok(w, add_special_tokens=False).input_ids
        if len(ids) != 1 or ids[0] >= COMMON_TOKEN_ID:
            return []
    return [finding("trigger_common_word", "warning", [], msg("caption.doctor.common_trigger", trigger=trigger))]
