"""A crash at any instant costs at most the steps since the last checkpoint: every save is whole or absent, the
newest whole checkpoint is what resume and the Review step find, and a killed run reads "interrupted"."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from tests.helpers import tiny_config, write_toy_dataset
from trainer import io as tio
from trainer.io import append_jsonl, atomic_folder, atomic_write_bytes, read_jsonl
from trainer.run.events import MemorySink, Resumed, SaveRefused
from trainer.run.rundir import (
    CHECKPOINT_MARKER,
    RunPaths,
    clean_interrupted_saves,
    latest_checkpoint,
    rotate_checkpoints,
    run_status,
    write_checkpoint_marker,
    write_status,
)
from trainer.train import checkpoint as ckpt

REPO = Path(__file__).resolve().parent.parent
CHECKPOINT_FILES = {"lora.safetensors", "lora_diffusers.safetensors", "lora_ema.safetensors",
                    "lora_ema_diffusers.safetensors", "embedding.safetensors", "embedding_ema.safetensors",
                    "state.pt", CHECKPOINT_MARKER}


# ------------------------------------------------------------------------------ folders, markers, rotation


def fake_checkpoint(paths: RunPaths, step: int, marker: bool = True) -> Path:
    folder = paths.step_dir(step)
    folder.mkdir(parents=True)
    (folder / "lora.safetensors").write_bytes(b"x" * 100)
    torch.save({"step": step}, folder / "state.pt")
    if marker:
        write_checkpoint_marker(folder, step)
    return folder


def test_latest_checkpoint_skips_temp_torn_and_markerless_partial_folders(tmp_path):
    paths = RunPaths(tmp_path)
    fake_checkpoint(paths, 10)
    torn = fake_checkpoint(paths, 20)
    (torn / "lora.safetensors").write_bytes(b"x" * 3)  # the old save_final's half-copied LoRA
    partial = paths.step_dir(30)
    partial.mkdir()
    (partial / "lora.safetensors").write_bytes(b"x")  # LoRA written, killed before state.pt
    tmp = paths.checkpoints / ".step-000040.tmp-1-ab"
    tmp.mkdir()
    torch.save({"step": 40}, tmp / "state.pt")
    assert latest_checkpoint(paths) == paths.step_dir(10)
    from trainer.run.contents import checkpoint_files

    # the Review step: no torn or temp folder; a folder without a marker is from an older run and stays listed
    assert [c["label"] for c in checkpoint_files(tmp_path)] == ["checkpoints/step-000010/lora.safetensors",
                                                               "checkpoints/step-000030/lora.safetensors"]


def test_a_checkpoint_stranded_mid_replacement_is_still_found_and_put_back(tmp_path):
    paths = RunPaths(tmp_path)
    fake_checkpoint(paths, 10)
    good = fake_checkpoint(paths, 20)
    stranded = paths.checkpoints / ".step-000020.old-7-cd"
    os.replace(good, stranded)  # killed between the two renames of atomic_folder
    (paths.checkpoints / ".step-000020.tmp-7-cd").mkdir()
    assert latest_checkpoint(paths) == stranded
    paths.status.write_text(json.dumps({"status": "running", "pid": dead_pid(), "host": socket.gethostname()}))
    assert run_status(tmp_path)["resume_step"] == 20
    write_status(paths, "running")  # a resume claims the folder: leftovers go, the checkpoint comes back
    assert sorted(p.name for p in paths.checkpoints.iterdir()) == ["step-000010", "step-000020"]
    assert latest_checkpoint(paths) == paths.step_dir(20)


def test_starting_a_run_sweeps_what_a_killed_save_left(tmp_path):
    paths = RunPaths(tmp_path)
    fake_checkpoint(paths, 10)
    leftovers = [paths.root / ".status.json.abc.tmp", paths.step_dir(10) / ".state.pt.x1.tmp",
                 paths.final / ".lora.safetensors.x2.tmp", paths.samples / "step-000010" / ".0.png.x3.tmp",
                 paths.step_dir(10) / ".tmpAb12Cd"]  # safetensors' own temp file
    for p in leftovers:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"half")
    (paths.root / ".final.tmp-9-ef").mkdir()
    write_status(paths, "running", pid_started=time.time())
    assert not any(p.exists() for p in leftovers) and not (paths.root / ".final.tmp-9-ef").exists()
    assert (paths.step_dir(10) / "state.pt").is_file()


def test_rotation_never_deletes_the_newest_complete_checkpoint_or_the_one_just_written(tmp_path):
    paths = RunPaths(tmp_path)
    for step in (10, 20, 30):
        fake_checkpoint(paths, step)
    partial = paths.step_dir(40)
    partial.mkdir()  # an incomplete folder must not count toward keep_last
    removed = rotate_checkpoints(paths, keep_last=1, keep=paths.step_dir(20))
    assert sorted(p.name for p in removed) == ["step-000010"]
    assert latest_checkpoint(paths) == paths.step_dir(30) and partial.is_dir()


# ---------------------------------------------------------------------------------------- io primitives


def test_atomic_writes_fsync_the_folder_after_the_rename(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(tio, "fsync_dir", lambda p: seen.append((Path(p), (tmp_path / "f.bin").is_file())))
    atomic_write_bytes(tmp_path / "f.bin", b"data")
    assert seen == [(tmp_path, True)]  # the folder, once the new name is in it
    seen.clear()
    with atomic_folder(tmp_path / "ck") as tmp:
        (tmp / "a").write_bytes(b"1")
    assert (tmp_path / "ck" / "a").read_bytes() == b"1" and (tmp_path, True) in [(p, True) for p, _ in seen]
    assert seen[-1][0] == tmp_path


def test_folder_fsync_is_skipped_on_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(tio.os, "name", "nt")
    monkeypatch.setattr(tio.os, "open", lambda *a, **k: pytest.fail("Windows cannot open a folder to fsync"))
    tio.fsync_dir(tmp_path)


def test_a_folder_save_that_fails_leaves_the_old_folder_untouched(tmp_path):
    with atomic_folder(tmp_path / "ck") as tmp:
        (tmp / "a").write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_folder(tmp_path / "ck") as tmp:
        (tmp / "a").write_bytes(b"new")
        raise RuntimeError("refused")
    assert (tmp_path / "ck" / "a").read_bytes() == b"old" and os.listdir(tmp_path) == ["ck"]


def test_a_torn_last_line_costs_only_itself_not_the_next_row(tmp_path):
    path = tmp_path / "events.jsonl"
    append_jsonl(path, {"step": 1})
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"step": 2, "lo')  # a power cut in the middle of a row
    append_jsonl(path, {"step": 3})
    assert [r["step"] for r in read_jsonl(path)] == [1, 3]


# ------------------------------------------------------------------------------------ status of a run


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_running_status_whose_process_is_gone_reads_interrupted_with_where_to_resume(tmp_path):
    paths = RunPaths(tmp_path)
    fake_checkpoint(paths, 20)
    write_status(paths, "running", pid_started=time.time())
    assert json.loads(paths.status.read_text())["pid"] == os.getpid()
    assert run_status(tmp_path)["status"] == "running"  # this process is alive
    started = time.time()
    status = {"status": "running", "pid": dead_pid(), "host": socket.gethostname(), "pid_started": started}
    paths.status.write_text(json.dumps(status))
    assert run_status(tmp_path) == {**status, "status": "interrupted", "resume_step": 20}
    # the pid now belongs to a process that started after the run did: not the run's process
    paths.status.write_text(json.dumps({**status, "pid": os.getpid(), "pid_started": started - 3600 * 24 * 365 * 20}))
    assert run_status(tmp_path)["status"] == "interrupted"
    paths.status.write_text(json.dumps({**status, "host": "another-machine"}))
    assert run_status(tmp_path)["status"] == "running"  # nothing to judge by


def test_the_run_lists_show_a_killed_run_as_interrupted_with_its_resume_step(tmp_path):
    from trainer.train.runner import Runner
    from ui.context import AppContext
    from ui.paths import PathPolicy

    run = tmp_path / "runs" / "lora" / "20260101-000000"
    run.mkdir(parents=True)
    (run / "config.toml").write_text("")
    fake_checkpoint(RunPaths(run), 20)
    (run / "status.json").write_text(json.dumps({"status": "running", "pid": dead_pid(),
                                                 "host": socket.gethostname(), "pid_started": time.time()}))
    ctx = AppContext(workspace=tmp_path, policy=PathPolicy(tmp_path, False), runner=Runner())
    assert ctx.run_choices() == [("lora/20260101-000000 (interrupted, resume from step 20)", "lora/20260101-000000")]


# ------------------------------------------------------------------ saves of a real trainer (in process)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer

    root = tmp_path_factory.mktemp("trainer")
    cfg = tiny_config(write_toy_dataset(root / "data", n=4), root / "runs",
                      {"ema.enabled": True, "lora.trigger_embedding": True, "train.max_steps": 8})
    t = Trainer(cfg, MemorySink(), Commands(), Dist(), Hooks())
    t.prepare_run_folder(resume=None, parent=None)
    t.setup()
    return t


def _poison(tensor: torch.Tensor):
    class Poisoned:
        def __enter__(self):
            self.saved = tensor.detach().clone()
            with torch.no_grad():
                tensor.view(-1)[0] = float("nan")

        def __exit__(self, *exc):
            with torch.no_grad():
                tensor.copy_(self.saved)

    return Poisoned()


@pytest.mark.slow
@pytest.mark.parametrize("rank", [0, 1])
def test_a_refused_save_keeps_the_previous_rollback_target_on_every_rank(trainer, rank):
    from trainer.train.distributed import Dist

    main_dist = trainer.checkpointer.dist
    trainer.state.global_step = 2
    assert trainer.checkpointer.save(2) is not None
    target = trainer.checkpointer.last_good
    trainer.state.global_step = 3
    trainer.checkpointer.dist = Dist(rank=rank)  # the saving part as another rank sees it
    try:
        with _poison(trainer.models.trainable[0]):
            assert trainer.checkpointer.save(3) is None
    finally:
        trainer.checkpointer.dist = main_dist
    assert trainer.checkpointer.last_good is target  # a failure at the next step rolls back to step 2, not onto NaN
    assert latest_checkpoint(trainer.paths) == trainer.paths.step_dir(2)
    assert not trainer.paths.step_dir(3).exists()


@pytest.mark.slow
def test_a_nonfinite_ema_leaves_no_checkpoint_folder_at_all(trainer):
    trainer.state.global_step = 4
    with _poison(trainer.state.ema.shadow[0]):  # the live weights are fine: only the EMA's check can refuse
        assert trainer.checkpointer.save(4) is None
    assert not trainer.paths.step_dir(4).exists()  # no LoRA files without state.pt
    assert [p.name for p in trainer.paths.checkpoints.iterdir() if p.name.startswith(".")] == []
    assert any(isinstance(e, SaveRefused) and e.kind == "save_refused" for e in trainer.external_sink.events)


@pytest.mark.slow
def test_save_now_then_stop_at_the_same_step_replaces_the_checkpoint_whole(trainer):
    trainer.state.global_step = 5
    first = trainer.checkpointer.save(5)
    before = (first / "state.pt").stat().st_ino
    with torch.no_grad():
        trainer.models.trainable[0].add_(1.0)
    assert trainer.checkpointer.save_final() == trainer.paths.final / "lora.safetensors"
    folder = trainer.paths.step_dir(5)
    assert {p.name for p in folder.iterdir()} == CHECKPOINT_FILES and (folder / "state.pt").stat().st_ino != before
    state = ckpt.load_state(folder / "state.pt")
    assert torch.equal(next(iter(state["lora"]["unet"].values())).float(),
                       next(iter(trainer.models.lora.state_dicts()["unet"].values())).float())
    final = {p.name for p in trainer.paths.final.iterdir()}
    assert final == {n for n in CHECKPOINT_FILES if n.endswith(".safetensors")}
    assert (trainer.paths.final / "lora.safetensors").read_bytes() == (folder / "lora.safetensors").read_bytes()
    assert not [p for p in trainer.paths.root.rglob(".*")]  # no temp file or folder anywhere


# ------------------------------------------------------------------------ SIGKILL at random instants


class Zygote:
    """tests/crash_zygote.py: holds a trainer and forks one child per save for us to kill."""

    def __init__(self, dataset: Path, out: Path, log: Path):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
        self.log = log
        self.proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "crash_zygote.py"), str(dataset), str(out)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("w"), text=True,
                                     env=env, cwd=REPO)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(ln) for ln in self.proc.stdout], daemon=True).start()
        self.run_dir = Path(self.read(timeout=300)["ready"])

    def read(self, timeout: float = 120) -> dict:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"the zygote said nothing for {timeout} s:\n{self.log.read_text()[-3000:]}") from None

    def send(self, **cmd) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def step(self, step: int) -> None:
        self.send(op="step", step=step)
        assert self.read()["ok"]

    def run(self, kill_after: float | None = None, **cmd) -> dict:
        """Run one save in a fresh child; SIGKILL it ``kill_after`` seconds in. The reply says how it ended."""
        self.send(**cmd)
        pid = self.read()["pid"]
        if kill_after is not None:
            time.sleep(kill_after)
            with contextlib.suppress(ProcessLookupError):  # it finished first
                os.kill(pid, signal.SIGKILL)
        return self.read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def kill_times(rng: random.Random, seconds: float, n: int) -> list[float]:
    """``n`` instants spread over a save of ``seconds``: one at random in each of ``n`` equal slices."""
    return [seconds * 1.1 * (i + rng.random()) / n for i in range(n)]


def step_of(folder: Path) -> int:
    return int(re.search(r"step-(\d+)", folder.name)[1])


def assert_whole_and_latest(paths: RunPaths, allowed: set[int]) -> int:
    """The newest complete checkpoint is one of ``allowed`` steps, loads, and every file in it is of its step."""
    last = latest_checkpoint(paths)
    assert last is not None and step_of(last) in allowed, (last, allowed)
    step = step_of(last)
    assert ckpt.load_state(last / "state.pt")["step"] == step
    assert {p.name for p in last.iterdir()} == CHECKPOINT_FILES
    for f in last.glob("*.safetensors"):
        with safe_open(str(f), "pt") as fh:
            names = fh.keys()
            for key in names:
                assert torch.isfinite(fh.get_tensor(key).float()).all()
            if "ss_steps" in (fh.metadata() or {}):
                assert fh.metadata()["ss_steps"] == str(step), f
    if paths.final.is_dir():  # final/ is whole too: every file in it loads
        for f in paths.final.glob("*.safetensors"):
            with safe_open(str(f), "pt") as fh:
                assert fh.keys()
    return step


def interrupted_state(paths: RunPaths) -> tuple[str, ...]:
    """What a kill left mid-save: the names of the temp folders and the files inside them."""
    out = []
    for p in sorted(paths.checkpoints.iterdir()) + sorted(paths.root.iterdir()):
        if p.name.startswith(".") and p.is_dir():
            out.append(re.sub(r"-\d+-\w+$", "", p.name) + ":" + ",".join(sorted(q.name for q in p.iterdir())))
    return tuple(out)


def assert_swept(paths: RunPaths, step: int) -> None:
    clean_interrupted_saves(paths)
    assert not [p for p in paths.root.rglob(".*")], "temp files or folders left after the sweep"
    assert latest_checkpoint(paths) == paths.step_dir(step)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the zygote forks one child per save (POSIX)")
def test_a_kill_at_any_instant_of_any_save_costs_at_most_the_steps_since_the_last_checkpoint(tmp_path):
    rng = random.Random(19)
    data = write_toy_dataset(tmp_path / "data", n=4)
    zygote = Zygote(data, tmp_path / "runs", tmp_path / "zygote.log")
    try:
        paths = RunPaths(zygote.run_dir)
        zygote.step(2)
        assert zygote.run(op="save_checkpoint")["exit"] == 0
        assert assert_whole_and_latest(paths, {2}) == 2

        # a new checkpoint: LoRA, EMA and embedding files, state.pt, marker, rename; once one got through, the
        # next kills land in its replacement (Save now twice at one step)
        zygote.step(4)
        seconds = zygote.run(op="save_checkpoint")["seconds"]  # how long one takes, here and now
        shutil.rmtree(paths.step_dir(4))
        seen, good, resumed_copy = set(), 2, None
        for _ in range(3):  # a save timed on a busy machine can take longer or shorter later: time it again
            for t in kill_times(rng, seconds, 12):
                ended = zygote.run(op="save_checkpoint", kill_after=t)
                good = assert_whole_and_latest(paths, {good, 4})
                seen.add(interrupted_state(paths))
                if resumed_copy is None and interrupted_state(paths):
                    resumed_copy = tmp_path / "copy"
                    shutil.copytree(paths.root, resumed_copy)  # resumed below, with what the kill left
                assert ended["exit"] in (0, -signal.SIGKILL)
                assert_swept(paths, good)
            if len(seen) >= 3:
                break
            seconds, good = zygote.run(op="save_checkpoint")["seconds"], 4
        assert len(seen) >= 3, f"the kills did not land inside the saves: {seen}"

        # Stop right after Save now: the final save replaces step-4 and writes final/
        seconds = zygote.run(op="save_final")["seconds"]
        for t in kill_times(rng, seconds, 8):
            zygote.run(op="save_final", kill_after=t)
            assert assert_whole_and_latest(paths, {4}) == 4
            assert_swept(paths, 4)

        # metrics and events rows: whatever a kill tears, every row before it reads back, and the next writer's too
        for t in kill_times(rng, zygote.run(op="append", rows=50)["seconds"], 4):
            zygote.run(op="append", rows=50, kill_after=t)
            append_jsonl(paths.metrics, {"step": -1})
            assert read_jsonl(paths.metrics)[-1] == {"step": -1}

        # the file writers themselves, with synthetic tensors: the file is always the old value or the new one
        target = tmp_path / "w.safetensors"
        zygote.run(op="safetensors", path=str(target), numel=1_000_000, value=0)
        seconds = zygote.run(op="safetensors", path=str(target), numel=1_000_000, value=0)["seconds"]
        previous = 0
        for i, t in enumerate(kill_times(rng, seconds, 16), start=1):
            zygote.run(op="safetensors", path=str(target), numel=1_000_000, value=i, kill_after=t)
            with safe_open(str(target), "pt") as fh:
                value = int(fh.metadata()["value"])
                assert value in (previous, i) and torch.all(fh.get_tensor("w") == value)
            previous = value
    finally:
        zygote.close()

    # a real resume from a folder as a kill left it (temp folder and all): it continues from the newest whole
    # checkpoint and finishes the run
    from trainer.train.loop import run_training

    cfg = tiny_config(data, tmp_path / "runs", {"ema.enabled": True, "lora.trigger_embedding": True,
                                                "train.max_steps": 5, "save.keep_last": 2})
    assert resumed_copy is not None and run_status(resumed_copy)["status"] == "interrupted"
    resume_from = step_of(latest_checkpoint(RunPaths(resumed_copy)))
    sink = MemorySink()
    result = run_training(cfg, sink, resume=resumed_copy)
    assert result.status == "finished", result.message
    assert next(e for e in sink.events if isinstance(e, Resumed)).checkpoint.endswith(f"step-{resume_from:06d}")
    assert assert_whole_and_latest(RunPaths(resumed_copy), {5}) == 5
    assert not [p for p in resumed_copy.rglob(".*")] and run_status(resumed_copy)["status"] == "finished"
