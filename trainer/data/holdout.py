"""Pictures held back from the dataset for the validation loss: chosen once, the same on every run of a config."""

from __future__ import annotations

import random
from dataclasses import replace

from trainer.data.scan import DatasetReport, ImageItem, bucket_table
from trainer.errors import UserError
from trainer.message import msg


def split_holdout(report: DatasetReport, count: int, seed: int) -> tuple[DatasetReport, list[ImageItem]]:
    """``count`` of the dataset's own pictures (never prior images) moved out of ``report``: the training report
    (its counts and buckets recomputed, so the plan counts what trains) and the held-out items.

    The choice depends on the pictures' paths and ``seed`` only, not on the scan's order."""
    if count <= 0 or report.held_out:
        return report, []  # nothing to hold back, or already held back
    own = sorted((it for it in report.items if not it.prior), key=lambda it: it.rel)
    if count >= len(own):
        raise UserError(msg("error.holdout.too_many", count=count, n=len(own)))
    held = random.Random(f"{seed}:holdout").sample(own, count)
    held_rels = {it.rel for it in held}
    kept = [it for it in report.items if it.rel not in held_rels]
    train = replace(report, items=kept, images=len(kept), image_repeats=sum(it.repeats for it in kept),
                    buckets=bucket_table(kept), usable=bool(kept), held_out=count)
    return train, sorted(held, key=lambda it: it.rel)
