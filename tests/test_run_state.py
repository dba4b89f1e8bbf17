"""One run state: snapshots that nothing live aliases, bitwise-exact resume, rollback that restores the past."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from tests.helpers import Overflow, tiny_config, write_toy_dataset
from trainer.io import read_jsonl
from trainer.run.events import MemorySink, Rollback
from trainer.train.commands import Commands
from trainer.train.loop import Hooks, run_training
from trainer.train.state import DataPosition, TrainState

# ------------------------------------------------------------------------------------------- units


class _Lora:
    """The two methods TrainState needs of ``LoraModules``, over one plain module."""

    def __init__(self, module: torch.nn.Module):
        self.module = module

    def state_dicts(self):
        return {"unet": {k: v.detach().float().cpu().clone() for k, v in self.module.state_dict().items()}}

    def load_state_dicts(self, states):
        self.module.load_state_dict(states["unet"])


def _state(scaler: bool = False, ema: bool = True) -> tuple[TrainState, torch.nn.Linear]:
    from trainer.train.ema import LoraEMA

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4)
    opt = torch.optim.AdamW(layer.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)

    def new_scaler():
        return torch.amp.GradScaler("cpu", init_scale=2.0**10) if scaler else None

    state = TrainState(_Lora(layer), opt, sched, new_scaler(), LoraEMA(list(layer.parameters()), 0.9) if ema else None,
                       "fp16" if scaler else "fp32", new_scaler)
    return state, layer


def _train(state: TrainState, layer: torch.nn.Linear, steps: int) -> None:
    for _ in range(steps):
        loss = layer(torch.ones(2, 4)).pow(2).mean()
        loss.backward()
        state.optimizer.step()
        state.optimizer.zero_grad()
        state.lr_scheduler.step()
        state.ema.update()
        state.global_step += 1
        state.position.advance(1)


def _flat(state: TrainState) -> dict[str, torch.Tensor]:
    out = {f"lora.{k}": v for k, v in state.lora.state_dicts()["unet"].items()}
    for i, s in enumerate(state.ema.shadow):
        out[f"ema.{i}"] = s.clone()
    for pid, st in state.optimizer.state_dict()["state"].items():
        for k, v in st.items():
            out[f"opt.{pid}.{k}"] = v.clone()
    return out


def test_a_snapshot_on_the_cpu_does_not_move_with_the_run():
    state, layer = _state()
    _train(state, layer, 3)
    before = _flat(state)
    snap = state.snapshot()
    _train(state, layer, 3)
    # the snapshot still holds step 3: its EMA shadow and Adam moments did not follow the live ones
    assert all(torch.equal(snap["ema"]["shadow"][i], before[f"ema.{i}"]) for i in range(2))
    for pid, st in snap["optimizer"]["state"].items():
        assert torch.equal(st["exp_avg"], before[f"opt.{pid}.exp_avg"])
    state.restore(snap)
    assert state.global_step == 3 and state.position == DataPosition(0, 3, 3)
    restored = _flat(state)
    assert all(torch.equal(restored[k], before[k]) for k in before)
    # restoring and training on leaves the snapshot as it was: it can be restored again
    _train(state, layer, 2)
    state.restore(snap)
    assert all(torch.equal(_flat(state)[k], before[k]) for k in before)


def test_restore_disarms_a_scaler_whose_unscale_ran_for_a_step_never_taken():
    state, layer = _state(scaler=True, ema=False)
    snap = state.snapshot()
    loss = layer(torch.ones(2, 4)).pow(2).mean()
    state.scaler.scale(loss).backward()
    state.scaler.unscale_(state.optimizer)  # ...and then the guard rolls back: no step(), no update()
    state.restore(snap)
    state.optimizer.zero_grad()
    loss = layer(torch.ones(2, 4)).pow(2).mean()
    state.scaler.scale(loss).backward()
    state.scaler.unscale_(state.optimizer)  # raised "unscale_() has already been called" before
    state.scaler.step(state.optimizer)
    state.scaler.update()
    assert state.scaler.get_scale() == 2.0**10


# ------------------------------------------------------------------------------------ tiny-model runs


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_toy_dataset(tmp_path_factory.mktemp("data"))


class Record(Overflow):
    """Keeps the trainer and the files of every optimizer step's batches, stops at ``stop_at`` steps, and makes
    the backward passes numbered in ``overflow`` overflow (:class:`~tests.helpers.Overflow`)."""

    def __init__(self, commands: Commands | None = None, stop_at: int | None = None, overflow=()):
        super().__init__(overflow)
        self.commands, self.stop_at = commands, stop_at
        self.batches: list[list[str]] = []
        self.trainer = None

    def before_step(self, trainer):
        self.trainer = trainer

    def after_backward(self, trainer):
        self.batches.append(list(trainer.last_batch_files))
        super().after_backward(trainer)

    def after_step(self, trainer):
        if self.stop_at is not None and trainer.state.global_step == self.stop_at:
            self.commands.stop()


def _final_tensors(trainer) -> dict[str, torch.Tensor]:
    """Copies (the live tensors change in place as the run goes on) of the LoRA, EMA and optimizer tensors."""
    out = {f"lora.{role}.{k}": v for role, sd in trainer.models.lora.state_dicts().items() for k, v in sd.items()}
    if trainer.state.ema is not None:
        out.update({f"ema.{i}": s.clone() for i, s in enumerate(trainer.state.ema.shadow)})
    for pid, st in trainer.state.optimizer.state_dict()["state"].items():
        out.update({f"opt.{pid}.{k}": v.clone() for k, v in st.items() if isinstance(v, torch.Tensor)})
    return out


RESUME_CASES = {"fp32": "fp32", "bf16": "bf16", "fp16-with-skips": "fp16"}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(RESUME_CASES))
def test_resume_is_bitwise_exact(dataset, tmp_path, case):
    over = {"train.max_steps": 3, "train.grad_accum": 4, "train.batch_size": 1, "ema.enabled": True,
            "lora.trigger_embedding": True, "dataset.shuffle_tags": True, "dataset.caption_dropout": 0.2,
            "train.precision": RESUME_CASES[case]}
    overflow = (1, 3) if case == "fp16-with-skips" else ()  # two skipped steps before the stop at step 2
    straight_hooks = Record(overflow=overflow)
    straight = run_training(tiny_config(dataset, tmp_path / "a", over), MemorySink(), hooks=straight_hooks)
    assert straight.status == "finished", straight.message
    rows = read_jsonl(straight.run_dir / "metrics.jsonl")
    assert sum(r["skipped"] for r in rows) == len(overflow)
    if overflow:
        assert rows[-1]["loss_scale"] == straight_hooks.trainer.config.train.fp16_init_scale / 4

    commands = Commands()
    first_hooks = Record(commands, stop_at=2, overflow=overflow)
    first = run_training(tiny_config(dataset, tmp_path / "b", over), MemorySink(), commands, hooks=first_hooks)
    assert first.status == "stopped", first.message
    resumed_hooks = Record()
    resumed = run_training(tiny_config(dataset, tmp_path / "b", over), MemorySink(), resume=first.run_dir,
                           hooks=resumed_hooks)
    assert resumed.status == "finished", resumed.message

    assert first_hooks.batches + resumed_hooks.batches == straight_hooks.batches  # same batches, same order
    a, b = _final_tensors(straight_hooks.trainer), _final_tensors(resumed_hooks.trainer)
    assert a.keys() == b.keys()
    assert any(k.startswith("lora.emb.") for k in a) and any(k.startswith("ema.") for k in a)
    unequal = [k for k in a if not torch.equal(a[k], b[k])]
    assert not unequal, unequal[:5]
    assert straight_hooks.trainer.state.global_step == resumed_hooks.trainer.state.global_step == 3


class NanParamAfter(Hooks):
    """Breaks one LoRA weight after step ``at``; keeps, for every snapshot the guard may roll back to, an
    independent deep copy taken when it was made, and after the rollback compares the live state to it."""

    def __init__(self, at: int):
        self.at, self.done = at, False
        self.copies: dict[int, dict] = {}
        self.after_rollback: dict | None = None
        self.trainer = None

    def before_step(self, trainer):
        self.trainer = trainer
        snap = trainer.checkpointer.last_good
        if snap is not None and id(snap) not in self.copies:
            self.copies[id(snap)] = copy.deepcopy(snap)
        if trainer.guard.rollbacks and self.after_rollback is None:
            self.after_rollback = {"live": _final_tensors(trainer), "step": trainer.state.global_step,
                                   "scale": trainer.state.scaler.get_scale() if trainer.state.scaler else None,
                                   "past": self.copies[id(snap)]}

    def after_step(self, trainer):
        if trainer.state.global_step == self.at and not self.done:
            self.done = True
            with torch.no_grad():
                trainer.models.trainable[0].view(-1)[0] = float("nan")


@pytest.mark.slow
def test_fp16_rollback_without_bf16_restores_the_past_and_finishes(dataset, tmp_path, monkeypatch):
    import trainer.doctor.remedies

    monkeypatch.setattr(trainer.doctor.remedies, "bf16_supported", lambda device: False)  # a T4 / V100 / RTX 20xx
    cfg = tiny_config(dataset, tmp_path, {
        "train.precision": "fp16", "train.max_steps": 7, "save.every_steps": 3, "ema.enabled": True,
        "guard.on_nonfinite": "rollback", "train.fp16_init_scale": 256.0,
    })
    hooks = NanParamAfter(at=5)
    sink = MemorySink()
    result = run_training(cfg, sink, hooks=hooks)
    assert result.status == "finished", result.message
    rollback = next(e for e in sink.events if isinstance(e, Rollback))
    assert rollback.to_step == 3 and rollback.change["key"] != "train.precision"
    seen = hooks.after_rollback
    past = seen["past"]
    assert seen["step"] == past["step"] == 3
    assert seen["scale"] == past["scaler"]["scale"]
    live = seen["live"]
    for role, sd in past["lora"].items():
        for k, v in sd.items():
            assert torch.equal(live[f"lora.{role}.{k}"], v), k
    for i, s in enumerate(past["ema"]["shadow"]):
        assert torch.equal(live[f"ema.{i}"], s), f"ema {i}"
    for pid, st in past["optimizer"]["state"].items():
        for k in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(live[f"opt.{pid}.{k}"], st[k]), (pid, k)
    assert hooks.trainer.models.precision.precision == "fp16"
    assert read_jsonl(result.run_dir / "metrics.jsonl")[-1]["step"] == 7


class CountNoise(Overflow):
    def __init__(self, overflow_at=()):
        super().__init__(overflow_at)
        self.calls = 0

    def noise(self, trainer, noise):
        self.calls += 1
        return noise


@pytest.mark.slow
def test_skipped_steps_are_not_measured_for_update_ratio_and_consume_their_batches(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.max_steps": 11})
    hooks = CountNoise(overflow_at=(11, 12))  # the attempts at step 11 overflow twice, with the weights of step 10
    result = run_training(cfg, MemorySink(), hooks=hooks)
    assert result.status == "finished", result.message
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert [r["skipped"] for r in rows].count(True) == 2
    assert hooks.calls == len(rows) == 13  # one micro-batch a step: skipped steps drew (and used) theirs too
    measured = [r for r in rows if r["update_ratio"] is not None]
    # measured once at step 10's weights (the attempt that overflowed), not again against itself (ratio 0)
    assert len(measured) == 1 and measured[0]["update_ratio"] > 0


def test_latent_cache_refuses_nan_latents_and_re_encodes_a_nan_file(tmp_path):
    from safetensors.torch import save_file

    from trainer.config.schema import DatasetConfig
    from trainer.data.batches import LatentCache, samples_from_report
    from trainer.data.scan import scan_dataset
    from trainer.errors import UserError
    from trainer.models.tiny import build_tiny_pipeline

    root = write_toy_dataset(tmp_path / "data", n=2)
    report = scan_dataset(DatasetConfig(path=str(root), trigger="zxc", resolution=64, bucket_step=16,
                                        min_bucket_side=32, max_bucket_side=128))
    samples = samples_from_report(report, "zxc")
    vae = build_tiny_pipeline("sd15").vae
    cache = LatentCache(vae, torch.device("cpu"), torch.float32, tmp_path / "cache")
    key = cache._key(samples[0], False)
    (tmp_path / "cache").mkdir()
    save_file({"latents": torch.full((4, 8, 8), float("nan"))}, str(tmp_path / "cache" / f"{key}.safetensors"))
    cache.fill(samples, (False,), lambda done, total: None)
    assert all(torch.isfinite(t).all() for t in cache.memory.values())
    assert not list((tmp_path / "cache").glob("*.part")) and not list((tmp_path / "cache").glob(".*tmp"))

    broken = LatentCache(vae, torch.device("cpu"), torch.float32, None)
    broken.encode = lambda pixels: torch.full((1, 4, 8, 8), float("nan"))
    with pytest.raises(UserError, match=samples[0].rel.replace("\\", "/").split("/")[-1]):
        broken.fill(samples[:1], (False,), lambda done, total: None)


class SwitchToBf16(Hooks):
    """Switches an fp16 run to bf16 after step 1, as a rollback's precision change does, and looks at the models."""

    def __init__(self):
        self.seen: dict | None = None

    def after_step(self, trainer):
        if trainer.state.global_step == 1 and self.seen is None:
            cached_before = len(trainer.models.text._cache)
            trainer.recovery.apply_change({"key": "train.precision", "old": "fp16", "new": "bf16"})
            frozen = {part: {p.dtype for p in getattr(trainer.models.pipe, part).parameters()
                             if not p.requires_grad and p.is_floating_point()}
                      for part in ("unet", "text_encoder")}
            self.seen = {"cached_before": cached_before, "cached_after": len(trainer.models.text._cache),
                         "frozen": frozen, "vae": {p.dtype for p in trainer.models.pipe.vae.parameters()},
                         "scaler": trainer.state.scaler, "trainable": {p.dtype for p in trainer.models.trainable}}


@pytest.mark.slow
def test_a_switch_to_bf16_recasts_every_frozen_model_and_drops_fp16_text_embeddings(dataset, tmp_path):
    cfg = tiny_config(dataset, tmp_path, {"train.precision": "fp16", "train.max_steps": 3})  # no text-encoder LoRA
    hooks = SwitchToBf16()
    result = run_training(cfg, MemorySink(), hooks=hooks)
    assert result.status == "finished", result.message
    seen = hooks.seen
    assert seen["frozen"] == {"unet": {torch.bfloat16}, "text_encoder": {torch.bfloat16}}
    assert seen["vae"] == {torch.float32}  # a CPU's VAE stays fp32 in every precision
    assert seen["trainable"] == {torch.float32} and seen["scaler"] is None
    assert seen["cached_before"] > 0 and seen["cached_after"] == 0
    rows = read_jsonl(result.run_dir / "metrics.jsonl")
    assert rows[0]["loss_scale"] is not None and rows[-1]["loss_scale"] is None
