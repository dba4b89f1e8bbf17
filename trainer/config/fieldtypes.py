"""The value types settings share: step counts, text that can be saved, paths, registered names.

Each refuses a bad value with a message naming what is allowed; :mod:`trainer.config.schema` puts them together.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from trainer.config.choices import OneOf, optimizer_names
from trainer.models.family import AUTO, FAMILIES

MAX_STEPS = 1_000_000
"""The most optimizer steps a run, a save interval or a sample interval may count: about 12 days at a step a
second, far past any LoRA; a larger number is a typo (an extra zero, 1e23) that would only stall the plan."""


def _at_most_max_steps(v: Any) -> Any:
    # before int parsing, so 1e23 and inf get this message rather than pydantic's "unable to parse"
    if isinstance(v, int | float) and not isinstance(v, bool) and v > MAX_STEPS:
        raise PydanticCustomError("too_many_steps", "at most {limit} steps; a larger count is a typo",
                                  {"limit": f"{MAX_STEPS:,}"})
    return v


Steps = Annotated[int, BeforeValidator(_at_most_max_steps), Field(ge=0)]


MAX_PATH_CHARS = 4096  # Linux's PATH_MAX; a longer path cannot be opened anywhere
MAX_NAME_BYTES = 255  # one folder or file name, on every common filesystem
MAX_TRIGGER_CHARS = 200  # a rare word or two; CLIP reads 77 tokens of the whole prompt


def plain_text(v: str, max_chars: int) -> str:
    """Text that can be written to a TOML/JSON file and sent to the browser: UTF-8, no NUL, bounded."""
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise PydanticCustomError(
            "not_text", "holds a character that cannot be saved as text (a lone surrogate at position "
            "{pos}); retype it", {"pos": e.start}) from None
    if "\x00" in v:
        raise PydanticCustomError("nul_text", "holds a NUL character; retype it")
    if len(v) > max_chars:
        raise PydanticCustomError("too_long", "is {n} characters long; at most {limit}",
                                  {"n": f"{len(v):,}", "limit": f"{max_chars:,}"})
    return v


def path_text(v: str) -> str:
    """A path the filesystem can take: :func:`plain_text`, at most PATH_MAX long, no name over 255 bytes."""
    plain_text(v, MAX_PATH_CHARS)
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in Path(v).parts):
        raise PydanticCustomError("name_too_long", "a folder or file name in it is longer than {limit} bytes",
                                  {"limit": MAX_NAME_BYTES})
    return v


def one_of(names: Callable[[], tuple[str, ...]]) -> Callable[[str], str]:
    """A validator accepting the names ``names()`` returns when it runs (a registry that may grow)."""

    def check(v: str) -> str:
        allowed = names()
        if v not in allowed:  # worded as pydantic words a Literal's refusal
            quoted = [repr(n) for n in allowed]
            expected = " or ".join(filter(None, [", ".join(quoted[:-1]), quoted[-1]]))
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return v

    return check


PathText = Annotated[str, AfterValidator(path_text)]
TriggerText = Annotated[str, AfterValidator(lambda v: plain_text(v, MAX_TRIGGER_CHARS))]
OptimizerName = Annotated[str, OneOf(optimizer_names), AfterValidator(one_of(optimizer_names))]
"""A registered optimizer's name (trainer/train/optim.py registers them)."""


def family_names() -> tuple[str, ...]:
    """"auto" and the registered families, read when a config is checked: adding a family's adapter is all it takes."""
    return (AUTO, *FAMILIES)


FamilyName = Annotated[str, OneOf(family_names), AfterValidator(one_of(family_names))]
