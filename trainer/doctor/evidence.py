"""The vocabulary of the verdict's evidence: the labels, how far each piece is trusted, one observation, and how
the strongest tier decides (:mod:`trainer.doctor.verdict` weighs them)."""

from __future__ import annotations

from dataclasses import dataclass

from trainer.message import Msg, msg

LABELS = ("fit", "under", "over", "broken", "none")  # none: nothing trained to judge
STRENGTHS = ("strong", "moderate", "weak")
# how much a score of each strength counts when checkpoints are compared (likeness + adherence - leakage - burn)
STRENGTH_WEIGHT = {"strong": 1.0, "moderate": 0.6, "weak": 0.25}

# each label and strength for people (worded in words/verdict.py)
LABEL_TEXT = {label: Msg(f"verdict.label.{label}") for label in LABELS}
STRENGTH_TEXT = {strength: Msg(f"verdict.strength.{strength}") for strength in STRENGTHS}


@dataclass(frozen=True)
class Observation:
    """One piece of evidence: what was seen, which verdict it points to (None: no direction), how far to trust it."""

    source: str  # guard | model | pictures | dose | numbers
    points_to: str | None  # one of LABELS, or None
    strength: str  # one of STRENGTHS
    text: Msg | dict[str, str]  # a dict: a finding worded before codes
    signal: str | None = None  # the knowledge-base signal it is, when it is one (the diagnosis ranks causes by it)

    def line(self, outweighed: bool = False) -> Msg:
        """The observation for people, with its strength in words; ``outweighed`` when the verdict went the other way."""
        return msg("verdict.line_outweighed" if outweighed else "verdict.line", text=self.text,
                   strength=STRENGTH_TEXT[self.strength])



def decide(observations: list[Observation] | tuple[Observation, ...]) -> str:
    """The label the strongest tier of evidence gives; within a tier broken > over > under > fit."""
    for tier in STRENGTHS:
        said = {o.points_to for o in observations if o.strength == tier and o.points_to in LABELS}
        for label in ("broken", "over", "under", "fit"):
            if label in said:
                return label
    return "fit"
