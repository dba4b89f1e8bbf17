"""What a run leaves behind: LoRA files (kohya, diffusers, EMA), resume state, and sample pictures.

Two parts of :class:`trainer.train.loop.Trainer`: the :class:`Checkpointer` and the :class:`Sampler`.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.errors import error_line, is_out_of_memory
from trainer.export.lora_files import DIFFUSERS_TWIN, write_diffusers, write_kohya
from trainer.io import atomic_folder, fsync_file
from trainer.message import Msg, msg
from trainer.models.embedding import EMBEDDING_EMA_FILE, EMBEDDING_FILE, write_embedding
from trainer.run.events import Alert, CheckpointSaved, SampleReady, SaveRefused
from trainer.run.rundir import newest_checkpoint_step, rotate_checkpoints, write_checkpoint_marker
from trainer.run.samples import expand_prompts
from trainer.sampling import sampling_pipeline, write_samples
from trainer.tensor_files import NonFiniteTensorError
from trainer.train import checkpoint as ckpt

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from trainer.config.schema import Config
    from trainer.data.scan import DatasetReport
    from trainer.plan.steps import Plan
    from trainer.run.rundir import RunPaths
    from trainer.train.distributed import Dist
    from trainer.train.loop import Trainer
    from trainer.train.modelset import TrainingModels
    from trainer.train.state import Emit, TrainState


class Checkpointer:
    """The run's saves: LoRA files (kohya, diffusers, EMA, embedding) and ``state.pt`` per checkpoint, the final
    files, and the rollback target ``last_good`` (the last snapshot whose tensors were all finite)."""

    def __init__(self, config: Config, dist: Dist, paths: RunPaths, plan: Plan, report: DatasetReport,
                 models: TrainingModels, state: TrainState, emit: Emit, started_at: float):
        self.config, self.dist, self.paths, self.plan, self.report = config, dist, paths, plan, report
        self.models, self.state, self.emit, self.started_at = models, state, emit, started_at
        self.last_good: dict[str, Any] | None = None

    def snapshot(self) -> dict[str, Any]:
        """The run state with every rank's generators and the config. Every rank calls it at the same steps."""
        return ckpt.snapshot(self.state, self.dist, self.config)

    def _export_ctx(self, step: int, weights: str) -> dict[str, Any]:
        m = self.models
        return {
            "config": self.config, "plan": self.plan, "report": self.report, "family": m.family,
            "unet_config": m.adapter.denoiser_config(m.pipe), "epoch": self.state.epoch + 1, "step": step,
            "started_at": self.started_at, "run_id": self.paths.root.name,
            "precision": m.precision.precision, "prediction_type": m.base_info.prediction_type, "weights": weights,
        }

    def write_lora_files(self, folder: Path, step: int) -> list[Path]:
        lora, family, ema = self.models.lora, self.models.family, self.state.ema
        states = lora.adapter_state_dicts()
        written = [
            write_kohya(folder / "lora.safetensors", states, self._export_ctx(step, "live"), lora.config_by_role),
            write_diffusers(folder / DIFFUSERS_TWIN["lora.safetensors"], states, lora.config_by_role, family),
        ]
        emb = lora.embedding
        if emb is not None:
            written.append(write_embedding(folder / EMBEDDING_FILE, emb, family, {"step": str(step)}))
        if ema is not None:
            with ema.swapped_in():
                ema_states = lora.adapter_state_dicts()
                if emb is not None:
                    written.append(write_embedding(folder / EMBEDDING_EMA_FILE, emb, family,
                                                   {"step": str(step), "weights": "ema"}))
            written.append(write_kohya(folder / "lora_ema.safetensors", ema_states, self._export_ctx(step, "ema"),
                                       lora.config_by_role))
            written.append(write_diffusers(folder / DIFFUSERS_TWIN["lora_ema.safetensors"], ema_states,
                                           lora.config_by_role, family))
        return written

    def save(self, step: int) -> Path | None:
        """Save ``step`` as a checkpoint and make it the rollback target, or refuse both when the state is not finite.

        Every rank checks the state it holds (the ranks hold the same weights, so they agree on the rollback
        target); rank 0 writes the folder whole or not at all (:meth:`_write_checkpoint`).
        """
        state = self.snapshot()
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
        self.emit(CheckpointSaved(path=str(folder), files=files, removed=[p.name for p in removed]))
        return folder

    def _state_is_finite(self, state: dict[str, Any], path: Path) -> bool:
        bad = ckpt.nonfinite_in_state(state)
        if bad is not None:
            self._refused(NonFiniteTensorError(path, bad))
        return bad is None

    def _refused(self, e: NonFiniteTensorError) -> None:
        self.emit(SaveRefused(level="error", kind="save_refused", message=str(e), file=str(e.path), tensor=e.key))

    def _write_checkpoint(self, step: int, state: dict[str, Any]) -> tuple[Path, list[str]]:
        """``checkpoints/step-NNNNNN/`` whole or not at all: LoRA files (live, EMA, embedding) and ``state.pt`` go
        into a temp folder, each checked finite as it is written, then the marker, then one rename. A folder of
        the same step (Save now, then Stop) is replaced the same way; a kill at any point leaves the previous
        complete checkpoint where ``latest_checkpoint`` finds it."""
        folder = self.paths.step_dir(step)
        with atomic_folder(folder) as tmp:
            files = [f.name for f in self.write_lora_files(tmp, step)]
            ckpt.save_state(state, tmp / "state.pt")
            write_checkpoint_marker(tmp, step)
        return folder, [*files, "state.pt"]

    def save_final(self, state: dict[str, Any] | None = None) -> Path | None:
        """The last step's checkpoint, and ``final/`` holding its LoRA files (hard links where the filesystem
        allows: every write replaces a file, so a link never sees a later change). Both appear whole.
        ``state``: the snapshot every rank took together (several processes gather their generators)."""
        state = state if state is not None else self.snapshot()
        step = self.state.global_step
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
        self.emit(CheckpointSaved(path=str(step_dir), files=sorted(p.name for p in step_dir.iterdir()),
                                  final=True, removed=[]))
        return self.paths.final / "lora.safetensors"


class Sampler:
    """The run's sample pictures, on rank 0: the sample prompts at fixed seeds, with the live weights (and the EMA
    weights beside them after step 0). The sampling pipeline is made at the first sample point."""

    def __init__(self, config: Config, dist: Dist, paths: RunPaths, models: TrainingModels, state: TrainState,
                 emit: Emit):
        self.config, self.dist, self.paths, self.models, self.state, self.emit = config, dist, paths, models, state, emit
        self.prompts = expand_prompts(config.sample.prompts, config.dataset.trigger)
        self._pipeline: Any = None

    def sample(self, step: int) -> None:
        if not self.dist.is_main:
            return
        m = self.models
        if m.pipe.vae.device != m.device:
            m.pipe.vae.to(m.device)
        if self._pipeline is None:
            # text encoders moved off the device: the prompts' embeddings encoded before training stand in
            prompt_kwargs = m.text.prompt_kwargs if m.text.offloaded else None
            self._pipeline = sampling_pipeline(m.pipe, m.family, m.base_info.prediction_type, prompt_kwargs)
        size = (self.config.dataset.resolution, self.config.dataset.resolution)
        folder = self.paths.sample_dir(step)
        t0 = time.perf_counter()
        records = write_samples(self._pipeline, m.modules(), self.prompts, self.config.sample, size, m.precision,
                                folder, step, ema=self.state.ema if step > 0 else None)
        self.emit(SampleReady(step=step, path=str(folder), samples=records,
                              seconds=round(time.perf_counter() - t0, 3)))

    def sample_at_end(self, step: int) -> None:
        """The last step's samples, after the final LoRA is saved: a failure here (the card's memory, at the end of
        hours) is one warning, and the run still ends finished."""
        try:
            self.sample(step)
        except Exception as e:
            log.warning("the last step's samples failed", exc_info=e)
            self.emit(Alert.failed("samples", step, "run.final_samples_failed", e))


LOW_SPACE = 64 * 2**20  # a write that failed with this little left on the run folder's disk: it filled the disk


def failure_said(trainer: Trainer, error: BaseException) -> Msg | None:
    """A failure the user can act on, said as an alert (a full disk, the device's memory), with the message the run
    ends with; None for any other failure."""
    return disk_full_said(trainer, error) or out_of_memory_said(trainer, error)


def out_of_memory_said(trainer: Trainer, error: BaseException) -> Msg | None:
    """When ``error`` is the device running out of memory, say what to change and from where the run can go on."""
    if not is_out_of_memory(error):
        return None
    step = _failed_at(trainer)
    resume = newest_checkpoint_step(trainer.paths.root) if trainer.opened else None
    where = msg("run.out_of_memory_resume", step=resume) if resume is not None else ""
    message = msg("run.out_of_memory", step=step, error=error_line(error), resume=where)
    trainer.emit(Alert(level="error", kind="run_out_of_memory", step=step, message=message))
    return message


def _failed_at(trainer: Trainer) -> int:
    """The step a failing run had reached (0 when it failed before its state was built)."""
    state = getattr(trainer, "state", None)
    return state.global_step if state is not None else 0


def disk_full_said(trainer: Trainer, error: BaseException) -> Msg | None:
    """When ``error`` is the run folder's disk filling up, say so (an alert: where, how much is free, how to go on
    from the last complete checkpoint) and return the message; None for any other failure. torch.save's error on a
    full disk names no disk ("unexpected pos 576 vs 534"), so a failure with almost nothing left counts too."""
    if not trainer.opened:
        return None
    root = trainer.paths.root
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return None
    chain: list[BaseException] = []
    e: BaseException | None = error
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    said_full = any(getattr(x, "errno", None) == errno.ENOSPC or "No space left" in str(x) for x in chain)
    if not (said_full or free < LOW_SPACE):
        return None
    from trainer.plan.memory import gib

    step = _failed_at(trainer)
    resume = newest_checkpoint_step(root)
    message = (msg("run.disk_full", root=str(root), free=gib(free), step=step, resume=resume) if resume is not None
               else msg("run.disk_full_no_checkpoint", root=str(root), free=gib(free), step=step))
    trainer.emit(Alert(level="error", kind="disk_full", step=step, message=message))
    return message


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:  # FAT, some network shares: no hard links
        shutil.copyfile(src, dst)
        fsync_file(dst)
