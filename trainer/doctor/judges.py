"""Picture judges: something that can read what a sample picture shows (a CLIP or SigLIP model, or the demo
world's own measures) and says how much a trigger picture looks like the subject (``likeness``), how well a
picture follows its prompt (``adherence``) and how far a no-trigger picture left the base model's (``leakage``).

The doctor works without any (:mod:`trainer.doctor.model_measures` reads the model itself); a judge registered
here is one more, stronger, piece of evidence on the runs it applies to. A judge registers itself when its
module is imported; the doctor never names one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.config.schema import Config


@dataclass(frozen=True)
class SamplePicture:
    """One sample picture of a step, with the base model's (step 0) picture of the same prompt and seed."""

    record: dict[str, Any]  # the sample manifest's record: prompt, kind, seed, file, …
    image: np.ndarray  # HxWx3 uint8
    base_image: np.ndarray


@dataclass(frozen=True)
class PictureJudge:
    """``reader(config, base_pictures)`` returns None when the judge does not apply to this run (given the step-0
    pictures, e.g. to see that the base does not draw the subject already), else a function that reads one
    :class:`SamplePicture` into any of ``likeness``, ``adherence`` and ``leakage``."""

    name: str
    reader: Callable[[Config, list[SamplePicture]], Callable[[SamplePicture], dict[str, float]] | None]
    strength: str = "strong"  # how far the verdict trusts its readings (trainer.doctor.verdict.STRENGTHS)


_JUDGES: dict[str, PictureJudge] = {}


def register_judge(judge: PictureJudge) -> None:
    _JUDGES[judge.name] = judge


def judge_named(name: str | None) -> PictureJudge | None:
    return _JUDGES.get(name or "")


def reader_for(config: Config | None, base_pictures: list[SamplePicture]) -> tuple[PictureJudge, Callable] | None:
    """The most trusted registered judge that applies to this run, with its reader."""
    if config is None:
        return None
    order = {"strong": 0, "moderate": 1, "weak": 2}
    for judge in sorted(_JUDGES.values(), key=lambda j: order[j.strength]):
        read = judge.reader(config, base_pictures)
        if read is not None:
            return judge, read
    return None


from trainer.doctor import clip_judge  # noqa: E402, F401  (registers itself; needs the names above)
