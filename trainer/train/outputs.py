"""What a run leaves behind: LoRA files (kohya, diffusers, EMA), resume state, and sample pictures.

A mixin of :class:`trainer.train.loop.Trainer`.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

from trainer.export.lora_files import DIFFUSERS_TWIN, write_diffusers, write_kohya
from trainer.io import atomic_folder, fsync_file
from trainer.models.embedding import EMBEDDING_EMA_FILE, EMBEDDING_FILE, write_embedding
from trainer.run.rundir import rotate_checkpoints, write_checkpoint_marker
from trainer.tensor_files import NonFiniteTensorError
from trainer.train import checkpoint as ckpt
from trainer.train.parts import TrainerParts
from trainer.train.sampling import sampling_pipeline, write_samples


class OutputsMixin(TrainerParts):
    def _export_ctx(self, step: int, weights: str) -> dict[str, Any]:
        return {
            "config": self.config, "plan": self.plan, "report": self.report, "family": self.family,
            "unet_config": self.adapter.denoiser_config(self.pipe), "epoch": self.epoch + 1, "step": step,
            "started_at": self.started_at, "run_id": self.paths.root.name if self.paths else "",
            "precision": self.precision.precision, "prediction_type": self.base_info.prediction_type,
            "weights": weights,
        }

    def write_lora_files(self, folder: Path, step: int) -> list[Path]:
        states = self.lora.adapter_state_dicts()
        written = [
            write_kohya(folder / "lora.safetensors", states, self._export_ctx(step, "live"), self.lora.config_by_role),
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
            written.append(write_kohya(folder / "lora_ema.safetensors", ema_states, self._export_ctx(step, "ema"),
                                       self.lora.config_by_role))
            written.append(write_diffusers(folder / DIFFUSERS_TWIN["lora_ema.safetensors"], ema_states,
                                           self.lora.config_by_role, self.family))
        return written

    def save_checkpoint(self, step: int) -> Path | None:
        """Save ``step`` as a checkpoint and make it the rollback target, or refuse both when the state is not finite.

        Every rank checks the state it holds (the ranks hold the same weights, so they agree on the rollback
        target); rank 0 writes the folder whole or not at all (:meth:`_write_checkpoint`).
        """
        state = ckpt.snapshot(self)
        assert self.paths is not None
        if not self._state_is_finite(state, self.paths.step_dir(step) / "state.pt"):
            return None
        self.last_good = state
        if not self.dist.is_main:
            return None
        try:
            folder, files = self._write_checkpoint(step, state)
        except NonFiniteTensorError as e:
            self._refused(e)
            return None
        removed = rotate_checkpoints(self.paths, self.config.save.keep_last, keep=folder)
        self.emit("checkpoint_saved", path=str(folder), files=files, removed=[p.name for p in removed])
        return folder

    def _state_is_finite(self, state: dict[str, Any], path: Path) -> bool:
        bad = ckpt.nonfinite_in_state(state)
        if bad is not None:
            self._refused(NonFiniteTensorError(path, bad))
        return bad is None

    def _refused(self, e: NonFiniteTensorError) -> None:
        self.emit("alert", level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key)

    def _write_checkpoint(self, step: int, state: dict[str, Any]) -> tuple[Path, list[str]]:
        """``checkpoints/step-NNNNNN/`` whole or not at all: LoRA files (live, EMA, embedding) and ``state.pt`` go
        into a temp folder, each checked finite as it is written, then the marker, then one rename. A folder of
        the same step (Save now, then Stop) is replaced the same way; a kill at any point leaves the previous
        complete checkpoint where ``latest_checkpoint`` finds it."""
        assert self.paths is not None
        folder = self.paths.step_dir(step)
        with atomic_folder(folder) as tmp:
            files = [f.name for f in self.write_lora_files(tmp, step)]
            ckpt.save_state(state, tmp / "state.pt")
            write_checkpoint_marker(tmp, step)
        return folder, [*files, "state.pt"]

    def sample(self, step: int) -> None:
        if not self.dist.is_main:
            return
        if self.pipe.vae.device != self.device:
            self.pipe.vae.to(self.device)
        if self._sampler is None:
            self._sampler = sampling_pipeline(self.pipe, self.family, self.base_info.prediction_type)
        size = (self.config.dataset.resolution, self.config.dataset.resolution)
        assert self.paths is not None
        folder = self.paths.sample_dir(step)
        t0 = time.perf_counter()
        modules = list(self.lora.models.values())
        records = write_samples(self._sampler, modules, self.sample_prompts, self.config.sample, size,
                                self.precision, folder, step, ema=self.ema if step > 0 else None)
        self.emit("sample_ready", step=step, path=str(folder), samples=records,
                  seconds=round(time.perf_counter() - t0, 3))

    def save_final(self, state: dict[str, Any] | None = None) -> Path | None:
        """The last step's checkpoint, and ``final/`` holding its LoRA files (hard links where the filesystem
        allows: every write replaces a file, so a link never sees a later change). Both appear whole.
        ``state``: the snapshot every rank took together (several processes gather their generators)."""
        state = state if state is not None else ckpt.snapshot(self)
        step = self.global_step
        assert self.paths is not None
        if not self._state_is_finite(state, self.paths.step_dir(step) / "state.pt"):
            return None
        try:
            step_dir, _ = self._write_checkpoint(step, state)
        except NonFiniteTensorError as e:
            self._refused(e)
            return None
        with atomic_folder(self.paths.final) as tmp:
            for f in sorted(step_dir.glob("*.safetensors")):
                _link_or_copy(f, tmp / f.name)
        self.emit("checkpoint_saved", path=str(step_dir), files=sorted(p.name for p in step_dir.iterdir()),
                  final=True, removed=[])
        return self.paths.final / "lora.safetensors"


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # FAT, some network shares: no hard links
        shutil.copyfile(src, dst)
        fsync_file(dst)
