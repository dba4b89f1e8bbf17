"""Data shipped with the trainer: ``kb.toml``, the symptom → cause → prescription knowledge base.

The file is read and validated by :mod:`trainer.doctor.kb`; nothing here imports it.
"""

from __future__ import annotations

from pathlib import Path

KB_PATH = Path(__file__).resolve().parent / "kb.toml"
