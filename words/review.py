"""Review: why a checkpoint is the one to use (``review.*``)."""

TEXTS = {
    "review.reason": ("{summary} Why: {why}.", "{summary} 근거: {why}."),
}
