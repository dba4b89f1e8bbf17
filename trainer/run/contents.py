"""Reading a run folder back: its config, its sample manifests, the LoRA files it saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.config.schema import Config, from_dict, read_toml
from trainer.errors import UserError
from trainer.message import msg
from trainer.run.rundir import RunPaths, checkpoint_matches_marker


def load_run_config(run_dir: str | Path) -> Config:
    paths = RunPaths(Path(run_dir))
    if not paths.config.is_file():
        raise UserError(msg("error.run.not_a_run", run_dir=run_dir))
    return from_dict(read_toml(paths.config), origin=str(paths.config))


def sample_manifests(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``samples/step-*/manifest.json``, by step, each with its folder as ``dir``."""
    out = []
    for m in sorted(RunPaths(Path(run_dir)).samples.glob("step-*/manifest.json")):
        try:
            data = json.loads(m.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue  # a manifest being written right now; the next look sees it
        data["dir"] = str(m.parent)
        out.append(data)
    return sorted(out, key=lambda d: d["step"])


def checkpoint_files(run_dir: str | Path) -> list[dict[str, Any]]:
    """The LoRA files a user can pick: every ``checkpoints/step-N/lora*.safetensors`` (live and EMA), then
    ``final/``. ``label`` is the path inside the run folder."""
    paths = RunPaths(Path(run_dir))
    out: list[dict[str, Any]] = []
    if paths.checkpoints.is_dir():
        for d in sorted(d for d in paths.checkpoints.glob("step-*") if checkpoint_matches_marker(d) is not False):
            step = int(d.name.split("-")[1])
            for name in ("lora.safetensors", "lora_ema.safetensors"):
                if (d / name).is_file():
                    out.append({"step": step, "file": str(d / name), "label": f"checkpoints/{d.name}/{name}",
                                "weights": "ema" if "ema" in name else "live", "final": False})
    if paths.final.is_dir():
        final_step = max((c["step"] for c in out), default=None)
        if final_step is None:  # checkpoints/ deleted to free space (the full-disk advice says so): the file's own
            final_step = _trained_steps(paths.final / "lora.safetensors")
        for name in ("lora.safetensors", "lora_ema.safetensors"):
            if (paths.final / name).is_file():
                out.append({"step": final_step, "file": str(paths.final / name), "label": f"final/{name}",
                            "weights": "ema" if "ema" in name else "live", "final": True})
    return out


def _trained_steps(lora: Path) -> int:
    """The steps a saved LoRA file says it was trained for (its kohya metadata, ``ss_steps``); 0 where it says none
    or cannot be read."""
    from safetensors import SafetensorError

    from trainer.models.base_files import checkpoint_metadata

    try:
        return int(checkpoint_metadata(lora).get("ss_steps", 0))
    except (OSError, ValueError, SafetensorError):
        return 0


def resolve_checkpoint(run_dir: str | Path, checkpoint: str | Path) -> Path:
    """A checkpoint given by label or path, which must be a LoRA file inside the run folder."""
    root = Path(run_dir).resolve()
    p = Path(checkpoint)
    p = (p if p.is_absolute() else root / p).resolve()
    if not p.is_relative_to(root) or p.suffix != ".safetensors" or not p.is_file():
        raise UserError(msg("error.run.not_its_lora", checkpoint=checkpoint))
    return p
