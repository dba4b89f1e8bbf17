"""Helpers for tests that train tiny models: a small captioned dataset and configs built from dotted keys."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from trainer.config.schema import Config, apply_overrides, from_dict
from trainer.train.loop import Hooks


def write_toy_dataset(root: Path, n: int = 8, size: int = 64, trigger: str = "zxc", seed: int = 0) -> Path:
    """``root/10_<trigger> toy/``: coloured shapes on plain backgrounds, captions with the trigger first."""
    rng = random.Random(seed)
    folder = root / f"10_{trigger} toy"
    folder.mkdir(parents=True, exist_ok=True)
    backgrounds = {"sky": (135, 190, 235), "grass": (60, 150, 70), "sand": (220, 200, 150)}
    for i in range(n):
        bg_name = rng.choice(sorted(backgrounds))
        img = Image.new("RGB", (size, size), backgrounds[bg_name])
        draw = ImageDraw.Draw(img)
        x, y = rng.randint(8, size // 2), rng.randint(8, size // 2)
        draw.ellipse((x, y, x + size // 3, y + size // 3), fill=(200, 40, 160), outline=(250, 220, 40), width=3)
        img.save(folder / f"{i:02d}.png")
        (folder / f"{i:02d}.txt").write_text(f"{trigger}, on {bg_name}", encoding="utf-8")
    return root


def tiny_config(dataset: Path, output_dir: Path, overrides: dict[str, Any] | None = None, base: str = "tiny-sd15") -> Config:
    """A fast config: 64 px, fp32, sampling off unless asked, no caching surprises."""
    data = {
        "model": {"base": base},
        "dataset": {"path": str(dataset), "trigger": "zxc", "resolution": 64, "bucket_step": 16,
                    "min_bucket_side": 32, "max_bucket_side": 128, "repeats": 1},
        "lora": {"rank": 4, "alpha": 4.0},
        "optim": {"lr": 1e-3, "scheduler": "constant", "warmup_steps": 0, "max_grad_norm": 1.0},
        "train": {"precision": "fp32", "batch_size": 2, "max_steps": 6, "seed": 7},
        "save": {"output_dir": str(output_dir), "every_steps": 0},
        "sample": {"enabled": False, "steps": 2, "guidance": 3.0},
        # the model measures cost a tiny run more than its steps: tests of them turn them on (test_model_measures)
        "measure": {"enabled": False},
    }
    flat = [f"{k}={_toml(v)}" for k, v in (overrides or {}).items()]
    return from_dict(apply_overrides(data, flat))


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return repr(v)


def lora_image(pipe, prompt: str = "zxc, on grass"):
    """One small deterministic picture (numpy), for comparing how LoRA files load."""
    import torch

    pipe.set_progress_bar_config(disable=True)
    out = pipe(prompt, num_inference_steps=3, guidance_scale=3.0, generator=torch.Generator().manual_seed(0),
               output_type="np")
    return out.images[0]


def images_of_both_formats(folder: Path, family: str) -> dict[str, Any]:
    """The same picture with the kohya file and with the diffusers file of ``folder`` loaded on a tiny model."""
    from trainer.models.tiny import build_tiny_pipeline

    images = {}
    for name in ("lora.safetensors", "lora_diffusers.safetensors"):
        pipe = build_tiny_pipeline(family)
        pipe.load_lora_weights(str(folder), weight_name=name)
        images[name] = lora_image(pipe)
    return images


class Overflow(Hooks):
    """The backward passes numbered in ``attempts`` (1-based, this run's) overflow, as a real model's do while an
    fp16 loss scale is too high: the scaler skips those steps and halves the scale. The tiny model's gradients
    are too small to overflow at any initial scale a config may set."""

    def __init__(self, attempts=()):
        self.attempts, self.backward_passes = set(attempts), 0

    def after_backward(self, trainer):
        self.backward_passes += 1
        if self.backward_passes in self.attempts:
            trainer.models.trainable[0].grad.fill_(float("inf"))


def snapshot_of(snap: dict[str, Any]):
    """A runner snapshot from its JSON form, events (alerts, samples, progress) given as the dicts they are
    written as; a missing ``type`` is the list's kind."""
    from trainer.run.events import RunEvent
    from trainer.train.runner import RunSnapshot

    snap = dict(snap)
    for name, kind in (("alerts", "alert"), ("samples", "sample_ready"), ("findings", "finding"), ("events", "")):
        if name in snap:
            snap[name] = [RunEvent.from_json({"type": kind, **e}) for e in snap[name]]
    if snap.get("progress") is not None:
        snap["progress"] = RunEvent.from_json({"type": "progress", **snap["progress"]})
    if snap.get("refusal") is not None:
        from trainer.message import Msg

        snap["refusal"] = Msg.from_json(snap["refusal"])
    return RunSnapshot(**snap)


def lora_modules(model) -> dict:
    """The peft LoRA layers of ``model`` by module name."""
    from peft.tuners.lora import LoraLayer

    return {n: m for n, m in model.named_modules() if isinstance(m, LoraLayer)}


class StopAt(Hooks):
    """A user's Stop after ``step``."""

    def __init__(self, step: int, commands):
        self.step, self.commands = step, commands

    def after_step(self, trainer):
        if trainer.state.global_step == self.step:
            self.commands.stop()


def assert_stopped_run_resumes_bit_for_bit(base: str, dataset: Path, tmp_path: Path) -> None:
    """A run of ``base`` stopped after step 3 and resumed gives the losses and the LoRA of one that never stopped, bit
    for bit (shuffled tags, noise offset and EMA on: every random draw and every state must come back)."""
    import torch
    from safetensors.torch import load_file

    from trainer.io import read_jsonl
    from trainer.run.events import MemorySink
    from trainer.train.commands import Commands
    from trainer.train.loop import run_training

    over = {"train.max_steps": 6, "dataset.shuffle_tags": True, "train.noise_offset": 0.05, "ema.enabled": True}
    straight = run_training(tiny_config(dataset, tmp_path / "a", over, base=base), MemorySink())
    commands = Commands()
    first = run_training(tiny_config(dataset, tmp_path / "b", over, base=base), MemorySink(), commands,
                         hooks=StopAt(3, commands))
    assert first.status == "stopped"
    resumed = run_training(tiny_config(dataset, tmp_path / "b", over, base=base), MemorySink(), resume=first.run_dir)
    assert resumed.status == "finished"
    a, b = (read_jsonl(r.run_dir / "metrics.jsonl") for r in (straight, resumed))
    assert [r["loss"] for r in a] == [r["loss"] for r in b]
    la, lb = (load_file(str(r.run_dir / "final" / "lora_diffusers.safetensors")) for r in (straight, resumed))
    assert la.keys() == lb.keys() and all(torch.equal(la[k], lb[k]) for k in la)


def tiny_model_folder(tmp_path_factory, family: str) -> Path:
    """``python -m trainer tiny-model FAMILY DIR``'s folder (a diffusers pipeline of random weights)."""
    from trainer.cli import main as cli_main

    out = tmp_path_factory.mktemp(f"tiny-{family}")
    assert cli_main(["tiny-model", family, str(out)]) == 0
    return out


def six_step_run(base: Path, dataset: Path, out: Path, overrides: dict[str, Any] | None = None):
    """(result, sink) of 6 steps on ``base``: saves at 3, samples, the model measures, 2 held-out pictures, LoRA
    on the attention and the feed forward."""
    from trainer.run.events import MemorySink
    from trainer.train.loop import run_training

    cfg = tiny_config(dataset, out, {"train.max_steps": 6, "save.every_steps": 3, "sample.enabled": True,
                                     "lora.targets": "attn_ff", "measure.enabled": True, "validation.holdout": 2,
                                     **(overrides or {})}, base=str(base))
    sink = MemorySink()
    result = run_training(cfg, sink)
    assert result.status == "finished", result.message
    return result, sink


def train_full_width(adapter, transformer, lora, scheduler_config: dict, hidden, pooled, steps: int = 2):
    """``steps`` optimizer steps of ``lora`` (attached to a full-width ``transformer``) through the family's own
    forward pass on one 64 px picture's latents (16 channels, 8×8) and the given text conditioning; the last loss."""
    import torch

    schedule = adapter.noise_schedule(scheduler_config, "flow")
    gen = torch.Generator().manual_seed(1)
    x0 = torch.randn(1, 16, 8, 8, generator=gen)
    optimizer = torch.optim.AdamW(lora.trainable("transformer"), lr=1e-2)
    for _ in range(steps):
        t = schedule.draw(1, gen)
        noisy, target = schedule.noised(x0, torch.randn(x0.shape, generator=gen), t)
        pred = adapter.predict(transformer, noisy, schedule.model_timesteps(t), hidden, pooled, [(64, 64)])
        loss = torch.nn.functional.mse_loss(pred.float(), target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return loss


class InfInBatch(Hooks):
    """An inf in one batch's latents at ``at_step`` (the files of that batch kept in ``files``)."""

    def __init__(self, at_step: int):
        self.at_step, self.files = at_step, None

    def batch_latents(self, trainer, latents):
        if trainer.state.global_step + 1 == self.at_step and self.files is None:
            latents = latents.clone()
            latents[0, 0, 0, 0] = float("inf")
            self.files = list(trainer.last_batch_files)
        return latents


class NanGradOnce(Hooks):
    """NaN in the first trainable tensor's gradient once, at ``at_step``."""

    def __init__(self, at_step: int):
        self.at_step, self.done = at_step, False

    def after_backward(self, trainer):
        if trainer.state.global_step + 1 == self.at_step and not self.done:
            self.done = True
            trainer.models.trainable[0].grad.fill_(float("nan"))


def assert_sweeps_and_diagnoses(run_dir: Path) -> dict[str, Any]:
    """The Review step's strength sweep (0 and 1) draws every picture of the finished run, and the doctor gives it a
    verdict; returns the diagnosis."""
    from trainer.doctor.diagnose import diagnose
    from trainer.review import strength

    records = strength.strength_sweep(run_dir, "final/lora.safetensors", (0.0, 1.0))
    assert {r["strength"] for r in records} == {0.0, 1.0} and all(Path(r["file"]).is_file() for r in records)
    report = diagnose(run_dir, write=False)
    assert report.get("verdict")
    return report


def random_full_width(model_cls, config: dict):
    """``model_cls`` from ``config`` with random N(0, 0.02) fp32 weights on the CPU, built on the meta device first
    (no initialisation pass over billions of weights)."""
    import torch

    torch.manual_seed(0)
    with torch.device("meta"):
        model = model_cls.from_config(config)
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    return model


def exported_kohya(path, cfg, lora, family: str, transformer) -> tuple[dict, set[str]]:
    """``lora``'s kohya file written at ``path`` as a run writes it, read back: the tensors and the module names."""
    from safetensors.torch import load_file

    from trainer.export.lora_files import write_kohya
    from trainer.plan.steps import plan_from_config

    report, plan = plan_from_config(cfg)
    ctx = {"config": cfg, "plan": plan, "report": report, "family": family, "unet_config": dict(transformer.config),
           "epoch": 1, "step": 2, "started_at": 0.0}
    kohya = load_file(str(write_kohya(path, lora.adapter_state_dicts(), ctx, lora.config_by_role)))
    return kohya, {k.rsplit(".", 2)[0] if k.endswith(".weight") else k.rsplit(".", 1)[0] for k in kohya}


def kohya_delta(kohya: dict, name: str):
    """What a kohya file's module adds to its layer, as ComfyUI and Forge apply it: up · down · alpha / rank."""
    down, up = kohya[f"{name}.lora_down.weight"].float(), kohya[f"{name}.lora_up.weight"].float()
    return up @ down * (float(kohya[f"{name}.alpha"]) / down.shape[0])


def peft_delta(state: dict, module: str, alpha: float, rank: int):
    """What a trained PEFT module adds to its layer: B · A · alpha / rank."""
    return state[f"{module}.lora_B.weight"] @ state[f"{module}.lora_A.weight"] * (alpha / rank)
