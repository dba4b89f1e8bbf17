#!/usr/bin/env python
"""Settings a user changes: does the doctor still read the run as its pictures do?

    python scripts/doctor_settings.py                        # train what is missing, then print the tables
    python scripts/doctor_settings.py --print-only
    python scripts/doctor_settings.py --variants rank4 prodigy --seeds 42 1

The lines the verdict reads (trigger hold, prior drift) were set on the ``demo-character`` preset as it stands. Here
the demo character's 20 pictures and the 30 prior scenes, in plain folders (no demo manifest: the app judges them as
it judges yours), train on that preset with one setting changed as users change it, the dose kept in the zone: a
smaller rank (4, alpha 4, convolutions at 4), LoRA on attention and feed-forward instead of the cross-attention's
keys and values, no trained trigger embedding, Prodigy (lr 1, its own step size) in place of AdamW, and a LoRA on
the text encoder too (the default set); ``--variants constant batch2 alpha-half``: a constant lr instead of the
cosine, batch 2 instead of 4 (the same epochs, twice the steps), alpha at half the rank. The truth is the demo's own picture measures on 16 pictures a prompt
(``scripts/doctor_compare.py``); printed per save: the model measures, the truth and both verdicts; then each run's
verdict and first cause.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_folders import write_plain_folders
from doctor_calibration import run_config
from doctor_compare import compare

import words  # noqa: F401  run folders hold their messages worded, as the app and the CLI write them

VARIANTS = {  # name -> the one setting changed
    "rank4": {"lora.rank": 4, "lora.alpha": 4.0, "lora.conv_rank": 4},
    "attn-ff": {"lora.targets": "attn_ff"},
    "no-trigger-embedding": {"lora.trigger_embedding": False},
    "prodigy": {"optim.optimizer": "prodigy", "optim.lr": 1.0, "optim.embedding_lr": 0.0},
    "text-encoder": {"lora.train_text_encoder": True},
    "constant": {"optim.scheduler": "constant"},  # the full lr to the end: twice the cosine's dose
    "batch2": {"train.batch_size": 2},  # the same epochs in twice the steps, as a smaller card runs it
    "alpha-half": {"lora.alpha": 8.0},  # alpha = rank / 2: half the dose at the same lr
}
DEFAULT = ["rank4", "attn-ff", "no-trigger-embedding", "prodigy", "text-encoder"]  # the published table's


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("runs/doctor-calibration"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[42, 1])
    ap.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=DEFAULT)
    ap.add_argument("--print-only", action="store_true")
    args = ap.parse_args()
    data, prior = write_plain_folders(args.work)

    def config(extra: dict, seed: int):
        return lambda folder: run_config(data, prior, folder, 1.0, seed, extra)

    todo = [(f"{v}-seed{s}", config(VARIANTS[v], s)) for v in args.variants for s in args.seeds]
    return compare(args.work, todo, args.print_only)


if __name__ == "__main__":
    raise SystemExit(main())
