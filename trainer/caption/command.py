"""``python -m trainer caption`` and ``python -m trainer tiny-captioner``: the captioning edge of the CLI, worded
here in the reader's language (the rest of trainer/caption/ returns codes and values)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import words
from trainer.caption.compose import MODES, parse_words
from trainer.caption.models import KINDS
from trainer.errors import UserError
from trainer.message import msg


def add_commands(sub: Any) -> None:
    """Register both commands on the CLI's sub-parsers."""
    p = sub.add_parser("caption", help="caption a folder of pictures with a tagger, Florence-2 or BLIP (or --undo)")
    p.add_argument("folder", help="the dataset folder (kohya N_name folders inside are captioned too)")
    p.add_argument("--captioner", choices=["auto", *KINDS], default="auto",
                   help="auto: the tagger for an anime base (--base), Florence-2 otherwise")
    p.add_argument("--model", default="", metavar="ID_OR_PATH", help="local folder or hub id (default: the usual one)")
    p.add_argument("--base", default="", metavar="BASE", help="the base model you will train on (for --captioner auto)")
    p.add_argument("--trigger", default="", help="written first in every caption")
    p.add_argument("--mode", choices=MODES, default="fill",
                   help="fill: only pictures without a caption; overwrite: replace; append: add new tags")
    p.add_argument("--exclude", default="", metavar="WORDS",
                   help="comma-separated words to leave out: the subject's fixed look, which the trigger should learn")
    p.add_argument("--general-threshold", type=float, default=0.35, metavar="P")
    p.add_argument("--character-threshold", type=float, default=0.85, metavar="P")
    p.add_argument("--batch-size", type=int, default=8, metavar="N")
    p.add_argument("--caption-ext", default=".txt")
    p.add_argument("--undo", action="store_true", help="put back the captions the last change replaced")
    p.add_argument("--json", action="store_true")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.set_defaults(func=cmd_caption)

    p = sub.add_parser("tiny-captioner", help="write a random-weight captioner of the real architecture (for tests)")
    p.add_argument("kind", choices=list(KINDS))
    p.add_argument("out_dir")
    p.set_defaults(func=cmd_tiny_captioner)


def _settings(args: argparse.Namespace):
    """The caption options checked as the config checks ``caption.*`` (a bad threshold names its option)."""
    from pydantic import ValidationError

    from trainer.config.invalid import input_reason
    from trainer.config.schema import CaptionConfig

    try:
        return CaptionConfig(captioner=args.captioner, model=args.model, general_threshold=args.general_threshold,
                             character_threshold=args.character_threshold, batch_size=args.batch_size)
    except ValidationError as e:
        err = e.errors()[0]
        option = "--" + str(err["loc"][0]).replace("_", "-")
        raise UserError(msg("caption.error.option", option=option, reason=input_reason(err))) from None


def cmd_caption(args: argparse.Namespace) -> int:
    from trainer.caption.journal import undo_last
    from trainer.caption.models import choose, load_captioner
    from trainer.caption.run import caption_folder, pictures_of

    lang = args.lang
    if args.undo:
        folder, _ = pictures_of(args.folder, args.caption_ext)
        change = undo_last(folder)
        line = words.say("caption.undone", lang, what=change.what, n=len(change.files))
        print(json.dumps({"undone": words.both(change.what), "files": change.files}, ensure_ascii=False, indent=2)
              if args.json else line)
        return 0
    settings = _settings(args)
    pictures_of(args.folder, args.caption_ext)  # a missing folder is named before a model is loaded
    choice = choose(settings.captioner, settings.model, args.base, settings.general_threshold,
                    settings.character_threshold)
    captioner = load_captioner(choice)
    try:
        run = caption_folder(args.folder, captioner, mode=args.mode, trigger=" ".join(args.trigger.split()),
                             exclude=parse_words(args.exclude), caption_ext=args.caption_ext,
                             batch_size=settings.batch_size,
                             progress=print_progress if sys.stderr.isatty() and not args.json else None)
    finally:
        captioner.close()
    if args.json:
        print(json.dumps({**run.to_json(), "captioner": choice.kind, "model": choice.model}, ensure_ascii=False,
                         indent=2))
    else:
        for r in run.results:
            print(f"{r['file']}: {r['new']}")
        print(words.say("caption.summary", lang, written=run.written, kept=run.kept, failed=len(run.failed),
                        seconds=run.seconds))
        if run.change:
            print(words.say("caption.undo_hint", lang, root=run.root))
    if run.failed:
        raise UserError(msg("caption.error.unreadable", n=len(run.failed),
                            files=", ".join(f"{f['file']} ({f['reason']})" for f in run.failed[:5])))
    return 0


def print_progress(done: int, total: int, seconds_left: float | None) -> None:
    left = f", ~{seconds_left:.0f} s left" if seconds_left is not None and done < total else ""
    print(f"\r{done}/{total}{left}   ", end="" if done < total else "\n", file=sys.stderr, flush=True)


def cmd_tiny_captioner(args: argparse.Namespace) -> int:
    from trainer.caption.tiny import build_tiny_captioner

    print(build_tiny_captioner(args.kind, args.out_dir))
    return 0
