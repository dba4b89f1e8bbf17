"""``python -m trainer mask`` and ``python -m trainer tiny-masker``: the mask maker's edge of the CLI, worded here in
the reader's language (the rest of trainer/masking/ returns codes and values)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import words
from trainer.caption.command import print_progress
from trainer.errors import UserError
from trainer.masking.makers import KINDS
from trainer.masking.run import MODES
from trainer.message import msg


def add_commands(sub: Any) -> None:
    p = sub.add_parser("mask", help="write a subject mask beside each picture for masked training (CLIPSeg or a "
                                    "background remover), or --undo")
    p.add_argument("folder", help="the dataset folder (kohya N_name folders inside are masked too)")
    p.add_argument("--masker", choices=KINDS, default="clipseg",
                   help="clipseg: the part the words name; rembg: an ONNX background remover")
    p.add_argument("--model", default="", metavar="ID_OR_PATH",
                   help="local folder, .onnx file or hub id (default: CIDAS/clipseg-rd64-refined, briaai/RMBG-1.4)")
    p.add_argument("--prompt", default="", metavar="WORDS",
                   help='what to mask, for CLIPSeg ("a person"; commas between several)')
    p.add_argument("--threshold", type=float, default=0.4, metavar="P", help="0 keeps the mask soft")
    p.add_argument("--expand", type=int, default=8, metavar="PIXELS", help="grow the mask by so many pixels")
    p.add_argument("--mode", choices=MODES, default="fill",
                   help="fill: only pictures without a mask (file or transparency); overwrite: all")
    p.add_argument("--caption-ext", default=".txt")
    p.add_argument("--undo", action="store_true", help="put back the masks the last run wrote or replaced")
    p.add_argument("--json", action="store_true")
    p.add_argument("--lang", choices=["en", "ko"], default="en")
    p.set_defaults(func=cmd_mask)

    p = sub.add_parser("tiny-masker", help="write a tiny mask maker of the real kind (for tests)")
    p.add_argument("kind", choices=list(KINDS))
    p.add_argument("out_dir")
    p.set_defaults(func=cmd_tiny_masker)


def cmd_mask(args: argparse.Namespace) -> int:
    from trainer.caption.journal import undo_last
    from trainer.caption.run import pictures_of
    from trainer.masking.makers import choose, load_masker
    from trainer.masking.run import check, mask_folder

    lang = args.lang
    folder, _ = pictures_of(args.folder, args.caption_ext)  # a missing folder is named before a model is loaded
    if args.undo:
        change = undo_last(folder, journal="masks")
        print(json.dumps({"undone": words.both(change.what), "files": change.files}, ensure_ascii=False, indent=2)
              if args.json else words.say("mask.undone", lang, what=change.what, n=len(change.files)))
        return 0
    check(args.threshold, args.expand)
    choice = choose(args.masker, args.model, args.prompt)  # no words for CLIPSeg: said before a model is loaded
    masker = load_masker(choice)
    try:
        run = mask_folder(folder, masker, prompt=args.prompt, mode=args.mode, threshold=args.threshold,
                          expand=args.expand, caption_ext=args.caption_ext,
                          progress=print_progress if sys.stderr.isatty() and not args.json else None)
    finally:
        masker.close()
    if args.json:
        print(json.dumps({**run.to_json(), "masker": choice.kind, "model": choice.model}, ensure_ascii=False,
                         indent=2))
    else:
        for r in run.results:
            print(f"{r['mask']}: {r['coverage']:.0%}")
        print(words.say("mask.summary", lang, written=run.written, kept=run.kept, failed=len(run.failed),
                        seconds=run.seconds))
        if run.odd:
            print(words.say("mask.odd", lang, n=len(run.odd), files=", ".join(r["file"] for r in run.odd[:5])))
        if run.change:
            print(words.say("mask.turn_on", lang))
            print(words.say("mask.undo_hint", lang, root=run.root))
    if run.failed:
        raise UserError(msg("mask.error.unreadable", n=len(run.failed),
                            files=", ".join(f"{f['file']} ({f['reason']})" for f in run.failed[:5])))
    return 0


def cmd_tiny_masker(args: argparse.Namespace) -> int:
    from trainer.masking.tiny import build_tiny_masker

    print(build_tiny_masker(args.kind, args.out_dir))
    return 0
