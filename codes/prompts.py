"""The four kinds of sample prompt (docs/training-guide.md, "Sample prompts that test generalisation"), in the order
a prompt list holds them: the trainer expands prompts by them (``trainer/run/samples.py``), ``words/`` names each."""

from __future__ import annotations

PROMPT_KINDS = ("trigger", "trigger_unseen", "trigger_outfit", "no_trigger")
