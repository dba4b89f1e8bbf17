"""The numbers a refactor must not change, as short fingerprints: the tiny SD1.5/SDXL models' weights, and per
family two 6-step runs (plain; min-SNR, validation loss, model measures and samples) - their LoRA weights,
losses, validation losses and measures. Run it in two trees and diff the outputs:

    python bench/numbers_fingerprint.py > new.json
    (cd <a worktree of the earlier revision> && python <path to this file> > old.json); diff old.json new.json

Single-threaded, about a minute. Nothing is asserted.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, ".")

import torch
from safetensors.torch import load_file

from tests.helpers import tiny_config, write_toy_dataset
from trainer.models.tiny import build_tiny_pipeline
from trainer.run.events import MemorySink
from trainer.train.loop import run_training

EXTRA = {"train.min_snr_gamma": 5.0, "validation.holdout": 2, "measure.enabled": True, "sample.enabled": True,
         "save.every_steps": 3}


def tensors_hash(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for key, value in sorted(tensors.items()):
        h.update(key.encode())
        h.update(value.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    torch.set_num_threads(1)
    out: dict[str, object] = {}
    for family in ("sd15", "sdxl"):
        pipe = build_tiny_pipeline(family)
        weights = {f"{part}.{k}": v for part in ("unet", "vae", "text_encoder", "text_encoder_2")
                   if getattr(pipe, part, None) is not None for k, v in getattr(pipe, part).state_dict().items()}
        out[f"tiny-{family} weights"] = tensors_hash(weights)
        tmp = Path(tempfile.mkdtemp())
        data = write_toy_dataset(tmp / "data")
        for label, extra in (("plain", {}), ("minsnr+val+measures", EXTRA)):
            cfg = tiny_config(data, tmp / "runs", {"train.max_steps": 6, **extra}, base=f"tiny-{family}")
            result = run_training(cfg, MemorySink())
            assert result.status == "finished", result.message
            rows = [json.loads(line) for line in (result.run_dir / "metrics.jsonl").read_text().splitlines()]
            key = f"{family} {label}"
            out[f"{key} lora"] = tensors_hash(load_file(str(result.run_dir / "final" / "lora_diffusers.safetensors")))
            out[f"{key} losses"] = [round(r["loss"], 7) for r in rows]
            if extra:
                out[f"{key} val"] = [r["val_loss"] for r in rows if "val_loss" in r]
                measures = [{k: v for k, v in json.loads(line).items() if k != "seconds"}
                            for line in (result.run_dir / "measures.jsonl").read_text().splitlines()]
                out[f"{key} measures"] = hashlib.sha256(json.dumps(measures).encode()).hexdigest()[:16]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
