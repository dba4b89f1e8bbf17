"""What a dataset's own captions propose before anything is trained: the trigger they already use, and sample
prompts of the four kinds (:data:`trainer.run.samples.PROMPT_KINDS`) built from that trigger and those captions.

A user's folder replaces the demo's trigger and prompts with these; the demo keeps its own (its prompts are the
ones its measures were calibrated on). Prompts are for the model, so they are English whatever the page's language.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from trainer.config.schema import DEFAULT_SAMPLE_PROMPTS, DatasetConfig
from trainer.data.caption_doctor import (
    MIN_CAPTIONS,
    NEARLY_ALL,
    STOPWORDS,
    caption_tags,
    caption_words,
    common_trigger,
)
from trainer.data.folders import KOHYA_FOLDER, check_root, discover_folders
from trainer.data.scan import read_caption
from trainer.run.samples import PROMPT_KINDS

MAX_TRIGGER_WORDS = 3  # a first tag longer than this is a description ("a woman standing in a park"), not a name
MAX_TRIGGER_CHARS = 40
# Taggers' head-count tags open most of their captions ("1girl, solo, ..."): they describe, they do not name.
HEAD_COUNT = re.compile(r"^(\d+\+?(girl|boy|other)s?|solo|no humans)$")
NO_TRIGGER_TAGS = 4  # the captions' most frequent tags that make the no-trigger prompt
# What a character's pictures rarely show, in the order tried: the first whose words no caption holds is used.
UNSEEN_SETTINGS = ("on snow", "on a beach", "in a forest", "on a city street at night", "underwater", "in a desert")
UNSEEN_POSES = ("from behind", "sitting", "from above", "running", "lying down")
OTHER_OUTFITS = ("wearing a blue hat", "wearing a red raincoat", "wearing sunglasses", "in a spacesuit",
                 "wearing a green scarf", "in a kitchen", "in a library")


def caption_texts(cfg: DatasetConfig) -> dict[str, str]:
    """The dataset's own caption files (picture's path inside the folder → its text; prior images left out), read
    without opening a picture: what a proposal needs before the full scan."""
    root = check_root(cfg.path)
    folders, _ = discover_folders(root, cfg)
    out = {}
    for f in folders:
        for path in f.files:
            text, status = read_caption(path, cfg.caption_ext)
            if status == "ok" and text:
                out[path.relative_to(root).as_posix()] = text
    return out


def propose_trigger(captions: dict[str, str] | list[str]) -> str | None:
    """The tag (else the word) that opens nearly every caption: the trigger the captions already use. None when
    too few captions agree, or what opens them is a description or an everyday word rather than a name."""
    texts = list(captions.values()) if isinstance(captions, dict) else list(captions)
    if len(texts) < MIN_CAPTIONS:
        return None
    firsts = [tags[0] for tags in (caption_tags(t) for t in texts) if tags]
    words = [ws[0] for ws in (caption_words(t) for t in texts) if ws]
    for openers in (firsts, words):
        if not openers:
            continue
        top, n = Counter(openers).most_common(1)[0]
        if n / len(texts) >= NEARLY_ALL and _name_like(top):
            return _as_written(top, texts)
    return None


def _name_like(text: str) -> bool:
    """A short run of words that is no description: no stopword, no tagger's head count, not an everyday word
    the base model already draws (the caption doctor's own test)."""
    ws = caption_words(text)
    if not 0 < len(ws) <= MAX_TRIGGER_WORDS or len(text) > MAX_TRIGGER_CHARS or set(ws) & STOPWORDS:
        return False
    return not HEAD_COUNT.match(text) and not common_trigger(text)


def _as_written(lowered: str, texts: list[str]) -> str:
    """The proposal as most captions write it (case kept: "Qwe" where they say so)."""
    seen: Counter[str] = Counter()
    for text in texts:
        at = text.lower().find(lowered)
        if at >= 0:
            seen[text[at : at + len(lowered)]] += 1
    return seen.most_common(1)[0][0] if seen else lowered


def sample_prompts_for(trigger: str, captions: dict[str, str] | list[str]) -> list[str]:
    """One prompt of each kind, in :data:`PROMPT_KINDS` order (which :func:`trainer.run.samples.expand_prompts`
    reads by position): the trigger alone; the trigger in a setting and pose no caption mentions; the trigger in
    another outfit or place no caption mentions; and, without the trigger, the captions' own most frequent tags
    (what the base model should go on drawing as it did)."""
    texts = list(captions.values()) if isinstance(captions, dict) else list(captions)
    seen = {w for t in texts for w in caption_words(t)}
    trigger = trigger.strip()
    build = {
        "trigger": lambda: trigger,
        "trigger_unseen": lambda: f"{trigger}, {_unseen(UNSEEN_SETTINGS, seen)}, {_unseen(UNSEEN_POSES, seen)}",
        "trigger_outfit": lambda: f"{trigger}, {_unseen(OTHER_OUTFITS, seen)}",
        "no_trigger": lambda: _no_trigger(trigger, texts),
    }
    return [build[kind]() for kind in PROMPT_KINDS]


def _unseen(candidates: tuple[str, ...], seen: set[str]) -> str:
    """The first candidate none of whose words (stopwords aside) a caption holds; the first when all are seen."""
    for c in candidates:
        if not (set(caption_words(c)) - STOPWORDS) & seen:
            return c
    return candidates[0]


def _no_trigger(trigger: str, texts: list[str]) -> str:
    """The captions' most frequent tags without the trigger (nor the one the captions themselves open with, where
    another was typed), in the order captions write them; the default no-trigger prompt when the captions hold
    nothing else."""
    trigger_words = set(caption_words(trigger)) | set(caption_words(propose_trigger(texts) or ""))
    counts: Counter[str] = Counter()
    first_at: dict[str, float] = {}
    for text in texts:
        tags = caption_tags(text)
        for i, tag in enumerate(tags):
            if set(caption_words(tag)) <= trigger_words:
                continue
            counts[tag] += 1
            first_at[tag] = min(first_at.get(tag, i), i)
    if not counts:
        return DEFAULT_SAMPLE_PROMPTS[PROMPT_KINDS.index("no_trigger")]
    top = [tag for tag, _ in counts.most_common(NO_TRIGGER_TAGS)]
    return ", ".join(sorted(top, key=lambda tag: first_at[tag]))


def run_name_for(folder: str | Path) -> str:
    """A run's name from its dataset folder: the folder's own name, or its parent's where the folder is one of
    kohya's ``N_name`` folders (``…/my-character/10_qwe`` → ``my-character``)."""
    path = Path(folder)
    name = path.name
    if KOHYA_FOLDER.match(name) and path.parent.name:
        name = path.parent.name
    return name
