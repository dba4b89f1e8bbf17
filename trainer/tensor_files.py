"""Writing tensors to a ``.safetensors`` file: atomic, and never with a NaN or Inf in it."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

from trainer.io import atomic_target


class NonFiniteTensorError(RuntimeError):
    def __init__(self, path: Path, key: str):
        super().__init__(f"refused to write {path.name}: tensor '{key}' holds NaN or Inf")
        self.path, self.key = path, key


def first_nonfinite(tensors: dict[str, torch.Tensor]) -> str | None:
    """One fused check over all tensors (one sync); only on failure find which one."""
    if not tensors:
        return None
    flags = torch.stack([torch.isfinite(t).all() for t in tensors.values()])
    if bool(flags.all()):
        return None
    return next(k for k, ok in zip(tensors, flags.tolist()) if not ok)


def save_safetensors(tensors: dict[str, torch.Tensor], path: str | Path, metadata: dict[str, str] | None = None) -> None:
    """Atomic safetensors write that refuses non-finite tensors."""
    path = Path(path)
    bad = first_nonfinite(tensors)
    if bad is not None:
        raise NonFiniteTensorError(path, bad)
    with atomic_target(path) as tmp:  # safetensors writes the temp file itself: one write, then the rename
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)
