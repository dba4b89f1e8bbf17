"""What a run leaves behind: LoRA files (kohya, diffusers, EMA), resume state, and sample pictures.

A mixin of :class:`trainer.loop.Trainer`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from . import checkpoint as ckpt
from .embedding import EMBEDDING_EMA_FILE, EMBEDDING_FILE, write_embedding
from .export import DIFFUSERS_TWIN, NonFiniteTensorError, rotate_checkpoints, write_diffusers, write_kohya
from .sampling import sampling_pipeline, write_samples


class OutputsMixin:
    def _export_ctx(self, step: int, weights: str) -> dict[str, Any]:
        return {
            "config": self.config, "plan": self.plan, "report": self.report, "family": self.family,
            "unet_config": dict(self.unet.config), "epoch": self.epoch + 1, "step": step,
            "started_at": self.started_at, "run_id": self.paths.root.name if self.paths else "",
            "precision": self.precision.precision, "prediction_type": self.base_info.prediction_type,
            "weights": weights,
        }

    def write_lora_files(self, folder: Path, step: int) -> list[Path]:
        states = self.lora.adapter_state_dicts()
        written = [
            write_kohya(folder / "lora.safetensors", states, self._export_ctx(step, "live")),
            write_diffusers(folder / DIFFUSERS_TWIN["lora.safetensors"], states, self.lora.config_by_role, self.family),
        ]
        emb = self.lora.embedding
        if emb is not None:
            written.append(write_embedding(folder / EMBEDDING_FILE, emb, self.family, {"step": str(step)}))
        if self.ema is not None:
            with self.ema.swapped_in():
                ema_states = self.lora.adapter_state_dicts()
                if emb is not None:
                    written.append(write_embedding(folder / EMBEDDING_EMA_FILE, emb, self.family,
                                                   {"step": str(step), "weights": "ema"}))
            written.append(write_kohya(folder / "lora_ema.safetensors", ema_states, self._export_ctx(step, "ema")))
            written.append(write_diffusers(folder / DIFFUSERS_TWIN["lora_ema.safetensors"], ema_states,
                                           self.lora.config_by_role, self.family))
        return written

    def save_checkpoint(self, step: int) -> Path | None:
        state = ckpt.snapshot(self)
        self.last_good = state
        if not self.dist.is_main:
            return None
        folder = self.paths.step_dir(step)
        try:
            files = self.write_lora_files(folder, step)
            ckpt.save_state(state, folder / "state.pt")
        except NonFiniteTensorError as e:
            self.emit("alert", level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key)
            return None
        removed = rotate_checkpoints(self.paths.checkpoints, self.config.save.keep_last)
        self.emit("checkpoint_saved", path=str(folder), files=[f.name for f in files],
                  removed=[p.name for p in removed])
        return folder

    def sample(self, step: int) -> None:
        if not self.dist.is_main:
            return
        if self.pipe.vae.device != self.device:
            self.pipe.vae.to(self.device)
        if not hasattr(self, "_sampler"):
            self._sampler = sampling_pipeline(self.pipe, self.base_info.prediction_type)
        size = (self.config.dataset.resolution, self.config.dataset.resolution)
        folder = self.paths.sample_dir(step)
        t0 = time.perf_counter()
        modules = list(self.lora.models.values())
        records = write_samples(self._sampler, modules, self.sample_prompts, self.config.sample, size,
                                self.precision, folder, step, ema=self.ema if step > 0 else None)
        self.emit("sample_ready", step=step, path=str(folder), samples=records,
                  seconds=round(time.perf_counter() - t0, 3))

    def save_final(self) -> Path | None:
        folder = self.paths.final
        try:
            self.write_lora_files(folder, self.global_step)
            ckpt.save_state(ckpt.snapshot(self), self.paths.step_dir(self.global_step) / "state.pt")
        except NonFiniteTensorError as e:
            self.emit("alert", level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key)
            return None
        step_dir = self.paths.step_dir(self.global_step)
        for f in folder.glob("*.safetensors"):
            (step_dir / f.name).write_bytes(f.read_bytes())
        self.emit("checkpoint_saved", path=str(step_dir), files=sorted(p.name for p in step_dir.iterdir()),
                  final=True, removed=[])
        return folder / "lora.safetensors"
