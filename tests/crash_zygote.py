"""A process that holds a real Trainer (tiny SD1.5, EMA and trigger embedding on) and forks one child per save, so
tests/test_crash_safety.py can SIGKILL that child at any instant of the save without paying for a model load
each time.

Run as ``python tests/crash_zygote.py DATASET OUTPUT_DIR`` from the repository root with OMP_NUM_THREADS=1 (a
forked child must not wait on the parent's thread pool) and the root on PYTHONPATH; one JSON command per line on stdin, JSON replies on
stdout. ``{"op": "step", "step": K}`` moves the trainer to step K with changed weights (in this process); every
other op runs in a forked child: the reply ``{"pid": ...}`` comes first (the moment to start the clock), then
``{"exit": code, "seconds": ...}`` once the child ended, killed or not.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

from tests.helpers import tiny_config
from trainer.io import append_jsonl
from trainer.run.events import RunEvent, RunFolderSink
from trainer.tensor_files import save_safetensors
from trainer.train import checkpoint as ckpt
from trainer.train.commands import Commands
from trainer.train.distributed import Dist
from trainer.train.loop import Hooks, Trainer

CONFIG = {"ema.enabled": True, "lora.trigger_embedding": True, "train.max_steps": 8, "save.keep_last": 2}


def build(dataset: Path, out: Path) -> Trainer:
    trainer = Trainer(tiny_config(dataset, out, CONFIG), None, Commands(), Dist(), Hooks())
    trainer.prepare_run_folder(resume=None, parent=None)
    trainer.setup()
    with tempfile.TemporaryDirectory() as scratch:  # imports and first-call costs paid here, not in every child
        trainer.checkpointer.write_lora_files(Path(scratch), 0)
        ckpt.save_state(trainer.checkpointer.snapshot(), Path(scratch) / "state.pt")
    return trainer


def move_to(trainer: Trainer, step: int) -> None:
    """As if training reached ``step``: other weights, so each checkpoint's files differ from the last's."""
    with torch.no_grad():
        for p in trainer.models.trainable:
            p.add_(1e-3 * step)
    trainer.state.global_step = step


def child_op(trainer: Trainer, cmd: dict) -> None:
    op = cmd["op"]
    if op == "save_checkpoint":
        assert trainer.checkpointer.save(trainer.state.global_step) is not None
    elif op == "save_final":
        assert trainer.checkpointer.save_final() is not None
    elif op == "append":  # the metrics and events rows a run appends every step
        sink = RunFolderSink(trainer.paths.root)
        for i in range(cmd["rows"]):
            sink(RunEvent.from_json({"type": "step", "time": time.time(), "step": 10_000 + i, "loss": 0.1,
                                     "pad": "x" * 2000}))
            sink(RunEvent.from_json({"type": "progress", "time": time.time(), "step": 10_000 + i}))
    elif op == "safetensors":  # the same file rewritten with another value: synthetic tensors
        save_safetensors({"w": torch.full((cmd["numel"],), float(cmd["value"]))}, Path(cmd["path"]),
                         {"value": str(cmd["value"])})
    elif op == "jsonl":
        append_jsonl(cmd["path"], {"value": cmd["value"]})
    else:
        raise ValueError(op)


def main() -> None:
    torch.set_num_threads(1)
    trainer = build(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"ready": str(trainer.paths.root)}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "step":
            move_to(trainer, cmd["step"])
            print(json.dumps({"ok": True}), flush=True)
            continue
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child_op(trainer, cmd)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stderr.flush()
            os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"exit": os.waitstatus_to_exitcode(status), "seconds": time.perf_counter() - t0}),
              flush=True)


if __name__ == "__main__":
    main()
