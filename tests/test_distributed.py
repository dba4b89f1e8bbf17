"""Two processes under torchrun over whole epochs: equal shares (padded when the batches do not split evenly),
the same weights on both ranks, different noise on each, and as many steps as the plan said."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

from tests.helpers import tiny_config, write_toy_dataset
from trainer.io import read_jsonl

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent

# 5 pictures × 10 repeats = 50 image-repeats, one bucket
CASES = {
    # 10 batches: 5 a rank, 5 steps an epoch; three held-out pictures scored (on rank 0) at the saves (steps 3, 6
    # and 9) and at the end
    "even": {"train.batch_size": 5, "train.grad_accum": 1, "save.every_steps": 3},
    "uneven": {"train.batch_size": 2, "train.grad_accum": 2},  # 25 batches: 13 a rank (one repeated), 7 steps
    # the flow-matching transformers (the tiny SD3.5, Flux.1 and Z-Image, saved as folders) share their gradients
    # and data the same way
    "sd3": {"train.batch_size": 5, "train.grad_accum": 1},
    "flux": {"train.batch_size": 5, "train.grad_accum": 1},
    "zimage": {"train.batch_size": 5, "train.grad_accum": 1},
}
TRANSFORMERS = ("sd3", "flux", "zimage")  # the cases whose base is that family's tiny model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    data = write_toy_dataset(tmp / "data", n=5)
    held = write_toy_dataset(tmp / "held", n=3, seed=1)
    from trainer.cli import main as cli_main

    for name in TRANSFORMERS:
        assert cli_main(["tiny-model", name, str(tmp / f"tiny-{name}")]) == 0
    paths = []
    for name, over in CASES.items():
        extra = {"validation.path": str(held)} if name == "even" else {}
        base = {"base": str(tmp / f"tiny-{name}")} if name in TRANSFORMERS else {}
        cfg = tiny_config(data, tmp / "runs" / name, {"train.max_steps": 0, "train.epochs": 2, **over, **extra}, **base)
        path = tmp / f"{name}.toml"
        path.write_text(cfg.to_toml())
        paths.append(str(path))
    out = tmp / "out"
    out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(_free_port()), "-m", "tests.dist_worker", str(out), *paths],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {name: [torch.load(out / f"{name}-rank{r}.pt", weights_only=False) for r in (0, 1)] for name in CASES}


@pytest.mark.parametrize("case", sorted(CASES))
def test_two_ranks_run_whole_epochs_to_the_plans_step_count(ranks, case):
    r0, r1 = ranks[case]
    assert r0["status"] == r1["status"] == "finished"
    assert r0["world_size"] == 2
    [started] = [e for e in read_jsonl(Path(r0["run_dir"]) / "events.jsonl") if e["type"] == "started"]
    assert started["base"]["family"] == (case if case in TRANSFORMERS else "sd15")  # the family the case is for
    plan = json.loads((Path(r0["run_dir"]) / "plan.json").read_text())
    assert plan["world_size"] == 2
    bs, accum = CASES[case]["train.batch_size"], CASES[case]["train.grad_accum"]
    per_rank = math.ceil(math.ceil(50 / bs) / 2)
    assert plan["steps_per_epoch"] == math.ceil(per_rank / accum)
    assert plan["total_steps"] == 2 * plan["steps_per_epoch"]
    assert r0["global_step"] == r1["global_step"] == r0["plan_total_steps"] == plan["total_steps"]
    assert r0["epochs_seen"] == r1["epochs_seen"] == 2
    rows = read_jsonl(Path(r0["run_dir"]) / "metrics.jsonl")
    assert [r["step"] for r in rows if not r["skipped"]] == list(range(1, plan["total_steps"] + 1))


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_ranks_end_with_the_same_weights_and_drew_their_own_noise(ranks, case):
    r0, r1 = ranks[case]
    for role, sd in r0["lora"].items():
        for k, v in sd.items():
            assert torch.equal(v, r1["lora"][role][k]), k
    denoiser = "transformer" if case in TRANSFORMERS else "unet"
    assert any(v.abs().sum() > 0 for k, v in r0["lora"][denoiser].items() if "lora_B" in k)  # it trained
    assert len(r0["noise_heads"]) == len(r1["noise_heads"])
    assert all(a != b for a, b in zip(r0["noise_heads"], r1["noise_heads"]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_epoch_the_two_shares_cover_every_picture_repeat(ranks, case):
    r0, r1 = ranks[case]
    steps = len(r0["batches"]) // 2  # per epoch
    for epoch in range(2):
        seen = Counter()
        for r in (r0, r1):
            for files in r["batches"][epoch * steps : (epoch + 1) * steps]:
                seen.update(files)
        assert len(seen) == 5 and all(n >= 10 for n in seen.values()), seen
        assert sum(seen.values()) - 50 <= CASES[case]["train.batch_size"]  # the padding repeats one batch at most


def test_rank_zero_scores_the_held_out_pictures_as_one_process_would(ranks):
    """Scoring runs on rank 0 alone while rank 1 waits at the next step's gradient exchange."""
    from trainer.config.schema import load_config
    from trainer.run.events import MemorySink
    from trainer.train.commands import Commands
    from trainer.train.distributed import Dist
    from trainer.train.loop import Hooks, Trainer

    r0, r1 = ranks["even"]
    assert r0["status"] == r1["status"] == "finished"  # rank 1 waited out rank 0's scoring at every save
    run = Path(r0["run_dir"])
    rows = read_jsonl(run / "metrics.jsonl")
    scored = {r["step"]: r["val_loss"] for r in rows if r.get("val_loss") is not None}
    assert sorted(scored) == [3, 6, 9, 10] and all(0 < v < 10 for v in scored.values())
    assert len(rows) == len({r["step"] for r in rows})  # one row a step: rank 1 writes none
    # the final weights, scored by one process on its own, give the number rank 0 wrote
    cfg = load_config(run / "config.toml")
    cfg.save.output_dir = str(run.parent.parent / "check")
    t = Trainer(cfg, MemorySink(), Commands(), Dist(), Hooks())
    t.prepare_run_folder(resume=None, parent=None)
    t.setup()
    assert t.validator.vset is not None and t.validator.vset.size == 3
    untrained = t.validator.loss()
    t.models.lora.load_state_dicts(r0["lora"])
    assert t.validator.loss() != pytest.approx(untrained, rel=1e-5)  # the trained weights score otherwise
    assert t.validator.loss() == pytest.approx(scored[10], rel=1e-5)
