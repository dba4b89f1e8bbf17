"""Before the first step: the dataset scanned and the plan made, the run folder opened (config, plan, journal,
status), the optimizer and its run state built, and a resumed run's checkpoint read. Plain functions the
trainer's ``setup`` calls in order."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.config.changes import setting_changes
from trainer.config.schema import Config, from_dict, read_toml, save_config
from trainer.data.batches import samples_from_report, training_captions
from trainer.data.holdout import split_holdout
from trainer.data.scan import DatasetReport
from trainer.doctor.guard import Guard
from trainer.errors import UserError
from trainer.io import atomic_write_json, atomic_write_text, read_jsonl
from trainer.message import msg
from trainer.models.conditioning import ForeseenText
from trainer.models.lora import EMBEDDING_ROLE
from trainer.plan.schedule import build_scheduler
from trainer.plan.steps import Plan, make_plan
from trainer.run.events import Alert, MultiSink, RunFolderSink, RunStatus, Sink
from trainer.run.rundir import RunPaths, latest_checkpoint, new_run_dir, run_status, write_status
from trainer.run.samples import expand_prompts
from trainer.run.worded import write_worded_json
from trainer.sampling import sample_batches
from trainer.train import checkpoint as ckpt
from trainer.train.distributed import Dist
from trainer.train.ema import LoraEMA
from trainer.train.modelset import TrainingModels, load_models
from trainer.train.optim import build_optimizer
from trainer.train.probes import measure_captions
from trainer.train.state import TrainState
from trainer.train.tensorboard_log import TensorBoardSink
from trainer.train.validation import held_out_folder, validation_samples


@dataclass
class RunFolder:
    """The run's folder and what was decided before any model loads."""

    paths: RunPaths
    report: DatasetReport  # the dataset scan, without the held-out pictures
    plan: Plan
    held_out: list[Any]  # the validation pictures: held back from the dataset and/or validation.path's
    sink: Sink  # the run folder's own files, TensorBoard and the caller's sink (rank 0); the caller's elsewhere


def scan_and_plan(cfg: Config, dist: Dist) -> tuple[DatasetReport, Plan, list[Any]]:
    """(the dataset's report without the held-out pictures, the plan, the held-out pictures)."""
    from trainer.data.scan import scan_dataset
    from trainer.doctor.judge_files import check_judge

    if not cfg.dataset.path:
        raise UserError(msg("error.train.no_dataset"))
    if cfg.lora.trigger_embedding and not cfg.dataset.trigger.strip():  # said before a run folder is made
        raise UserError(msg("error.trigger.needed"))
    check_judge(cfg.measure.judge)  # read when the pictures are, hours later: a wrong one is said now
    report = scan_dataset(cfg.dataset)
    if not report.usable:
        raise UserError(msg("error.train.no_usable", path=cfg.dataset.path))
    report, held_out = split_holdout(report, cfg.validation.holdout, cfg.validation.seed)
    held_out += held_out_folder(cfg)
    return report, make_plan(cfg, report, dist.world_size), held_out


def foreseen_text(cfg: Config, report: DatasetReport, held_out: list[Any]) -> ForeseenText:
    """Every caption and sample prompt the run will encode: the dataset's captions (and the empty one when captions
    are dropped), the held-out pictures' for the validation loss, the model measures', and the sample prompts batch
    by batch as the sampler draws them. Only needed when the text encoders are encoded up front."""
    if not cfg.model.offload_text_encoders:
        return ForeseenText()
    samples = samples_from_report(report, cfg.dataset.trigger)
    captions = training_captions(samples, cfg.dataset)
    captions += [s.caption for s in validation_samples(cfg, report, held_out)]
    captions += measure_captions(cfg, samples, report, held_out)
    batches: list[list[str]] = []
    if cfg.sample.enabled:
        prompts = expand_prompts(cfg.sample.prompts, cfg.dataset.trigger)
        size = (cfg.dataset.resolution, cfg.dataset.resolution)
        batches = [[p["prompt"] for p, _ in chunk] for chunk in sample_batches(prompts, cfg.sample, size)]
    return ForeseenText(captions, batches, cfg.sample.negative_prompt)


def run_models(cfg: Config, dist: Dist, report: DatasetReport, held_out: list[Any], emit: Sink) -> TrainingModels:
    """The run's models (:func:`load_models`) with every text it foresees; a text encoded later on the CPU, where
    offloaded text encoders are, is reported as an info alert: slow, not wrong."""
    models = load_models(cfg, dist, foreseen_text(cfg, report, held_out))
    models.text.on_unforeseen = lambda count, example: emit(Alert(
        level="info", kind="text_not_foreseen", message=msg("run.text_not_foreseen", count=count, example=example[:80])))
    return models


def open_run_folder(cfg: Config, dist: Dist, resume: str | Path | None, parent: str | Path | None,
                    started_at: float, sink: Sink | None) -> RunFolder:
    """A new run folder (or, with ``resume``, the run's own after checking it is not running elsewhere), with the
    config, plan, journal and a "running" status written by rank 0."""
    if resume:
        paths = RunPaths(Path(resume))
        if not paths.config.is_file():
            raise UserError(msg("error.resume.not_a_run", resume=resume))
        status = run_status(paths.root)
        if status.get("status") == RunStatus.RUNNING and status.get("pid") not in (None, os.getpid()):
            raise UserError(msg("error.resume.running", resume=resume, pid=status["pid"]))
        report, plan, held_out = scan_and_plan(cfg, dist)
    else:
        report, plan, held_out = scan_and_plan(cfg, dist)
        paths = dist.broadcast_object(new_run_dir(cfg.save.output_dir, cfg.save.name) if dist.is_main else None)
    out: Sink = sink or (lambda ev: None)
    if dist.is_main:
        save_config(cfg, paths.config)
        write_worded_json(paths.plan, plan.to_json())
        if not (resume and paths.journal.is_file()):  # a continued run keeps the run it was started from
            _write_journal(cfg, paths, parent)
        write_status(paths, RunStatus.RUNNING, pid_started=started_at)
        out = MultiSink([RunFolderSink(paths.root), TensorBoardSink(paths.root), *([sink] if sink else [])])
    return RunFolder(paths, report, plan, held_out, out)


def _write_journal(cfg: Config, paths: RunPaths, parent: str | Path | None) -> None:
    entry: dict[str, Any] = {"run": str(paths.root), "parent": None, "changes": {}}
    if parent:
        parent_cfg_path = RunPaths(Path(parent)).config
        if parent_cfg_path.is_file():
            parent_cfg = from_dict(read_toml(parent_cfg_path), origin=str(parent_cfg_path))
            entry["parent"] = str(Path(parent))
            entry["changes"] = {k: list(v) for k, v in setting_changes(parent_cfg, cfg).items()}
    atomic_write_json(paths.journal, entry)


def build_state(cfg: Config, models: TrainingModels, plan: Plan, dist: Dist) -> tuple[TrainState, Guard]:
    """The optimizer (the denoiser's LoRA at the lr, text encoders at theirs, a trigger embedding without weight
    decay), its schedule, the loss scaler and the EMA in one :class:`TrainState`; and the numerics guard."""
    denoiser_role = models.adapter.denoiser_component
    lora = models.lora
    groups = [{"params": lora.trainable(denoiser_role), "lr": cfg.optim.lr, "name": denoiser_role}]
    for role in lora.models:
        if role == EMBEDDING_ROLE:  # an embedding's deltas: no weight decay pulling them back to the base
            groups.append({"params": lora.trainable(role), "lr": cfg.effective_embedding_lr, "name": role,
                           "weight_decay": 0.0})
        elif role != denoiser_role:
            groups.append({"params": lora.trainable(role), "lr": cfg.effective_te_lr, "name": role})
    optimizer = build_optimizer(groups, cfg, models.device)
    state = TrainState(
        lora=lora,
        optimizer=optimizer,
        lr_scheduler=build_scheduler(optimizer, cfg, plan.total_steps),
        scaler=models.new_scaler(cfg),
        ema=LoraEMA(models.trainable, cfg.ema.decay, cfg.ema.warmup) if cfg.ema.enabled else None,
        precision=models.precision.precision,
        new_scaler=lambda: models.new_scaler(cfg),
        world_size=dist.world_size,
        rank=dist.rank,
    )
    guard = Guard(cfg.guard.on_nonfinite, models.precision.precision, cfg.guard.max_consecutive_skips,
                  cfg.guard.max_rollbacks)
    return state, guard


def resume_state(paths: RunPaths, dist: Dist) -> tuple[Path, dict[str, Any]]:
    """(the latest complete checkpoint, its run state). Refused when there is none or it was saved by another
    number of processes (the data position is a place in each rank's share of the epoch)."""
    last = latest_checkpoint(paths)
    if last is None:
        raise UserError(msg("error.resume.no_checkpoint", root=paths.root))
    state = ckpt.load_state(last / "state.pt")
    saved_world = int(state.get("world_size", 1))
    if saved_world != dist.world_size:
        raise UserError(msg("error.resume.world_size", root=paths.root, checkpoint=last.name, saved=saved_world,
                            now=dist.world_size))
    return last, state


def trim_metrics(paths: RunPaths, step: int) -> None:
    """Drop the metric rows past ``step``: they were never saved, and the resumed run trains them again."""
    rows = [r for r in read_jsonl(paths.metrics) if r.get("step", 0) <= step]
    atomic_write_text(paths.metrics, "".join(json.dumps(r) + "\n" for r in rows))



PARTS = ("models", "state", "feeder", "validator", "measures", "step_measures", "sampler", "checkpointer", "recovery")


def release_parts(trainer: Any) -> None:
    """Drop a trainer's parts (:data:`PARTS`) and give the device's cached memory back (on CUDA to the driver)."""
    import gc

    import torch

    trainer.ready = False
    for part in PARTS:
        setattr(trainer, part, None)
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
