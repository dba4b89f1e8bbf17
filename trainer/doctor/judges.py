"""Picture judges: something that can read what a sample picture shows (a CLIP or SigLIP model, or the demo
world's own measures) and says how much a trigger picture looks like the subject (``likeness``), how well a
picture follows its prompt (``adherence``) and how far a no-trigger picture left the base model's (``leakage``).

The doctor works without any (:mod:`trainer.doctor.model_measures` reads the model itself); a judge registered
here is one more, stronger, piece of evidence on the runs it applies to. A judge registers itself when its
module is imported; the doctor never names one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.config.schema import Config
from trainer.errors import UserError, error_reason
from trainer.message import msg

log = logging.getLogger(__name__)


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


class JudgeFailed(UserError):
    """A judge could not read a run's pictures: which and why, and what to do (``msg``), as the user is told."""


def guarded_reader(config: Config | None, base_pictures: list[SamplePicture]) -> tuple[PictureJudge, Callable] | None:
    """The most trusted registered judge that applies to this run, with its reader. Any failure of a judge's
    (loading its model, building its reader, reading a picture) is a :class:`JudgeFailed` naming it: a user's
    model files fail in the libraries' many ways."""
    if config is None:
        return None
    order = {"strong": 0, "moderate": 1, "weak": 2}
    for judge in sorted(_JUDGES.values(), key=lambda j: order[j.strength]):
        try:
            read = judge.reader(config, base_pictures)
        except Exception as e:
            raise _failed(e, config, judge.name) from e
        if read is not None:
            return judge, _guarded(read, config, judge.name)
    return None


def _guarded(read: Callable[[SamplePicture], dict[str, float]], config: Config, name: str) -> Callable:
    def guarded(p: SamplePicture) -> dict[str, float]:
        try:
            return read(p)
        except Exception as e:
            raise _failed(e, config, name) from e

    return guarded


def _failed(e: Exception, config: Config, name: str) -> JudgeFailed:
    if isinstance(e, UserError):  # its files, as the loader said it
        return e if isinstance(e, JudgeFailed) else JudgeFailed(e.msg)
    log.warning("the picture judge %s failed", name, exc_info=e)
    label = (config.measure.judge or name) if name == clip_judge.CLIP_JUDGE else name  # a CLIP judge: its model
    return JudgeFailed(msg("error.judge.read", name=label, reason=error_reason(e)))


from trainer.doctor import clip_judge  # noqa: E402  (registers itself; needs the names above)
