"""Does watching a run slow it down? Training throughput headless (the CLI) against the app with one tab
polling it at 1 Hz, alternating A/B runs of the same tiny config, medians and the ratio (target >= 0.95).

    python bench/bench_polling.py [--pairs 3] [--steps 40] [--threads 1]

A: ``python -m trainer train config.toml`` in its own process.
B: ``python app.py`` in its own process, the run started through its API, and this process polling the app's
   ``/poll`` endpoint (the one every browser tab calls, figures and all) once a second until the run ends.
Throughput is 1 / median seconds per optimizer step, read from each run's metrics.jsonl (the first steps,
which include warm-up, are left out). ``--threads`` caps torch's CPU threads in both (OMP_NUM_THREADS): on a
CPU shared with other jobs, spinning OpenMP threads otherwise make single runs 10-30x slower at random, which
swamps what is measured here (0 leaves torch's default). Not a test: timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SKIP_FIRST = 3
ENV: dict[str, str] = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "DIFFUSERS_VERBOSITY": "error",
       "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(REPO)}


def fields(steps: int) -> dict:
    """The run, as the UI's fields (B) and, through the same table, as a config file (A)."""
    return {"max_steps": steps, "save_every": 0, "sample_enabled": False, "batch_size": 2, "base": "tiny-sd15",
            "run_name": "bench"}


def throughput(run_dir: Path) -> float:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    secs = [r["sec_per_step"] for r in rows[SKIP_FIRST:] if not r.get("skipped")]
    return 1.0 / statistics.median(secs)


def newest_run(runs: Path) -> Path:
    return max((p.parent for p in runs.glob("*/*/metrics.jsonl")), key=lambda p: p.stat().st_mtime)


def run_headless(workspace: Path, steps: int) -> float:
    from trainer.config import save_config
    from ui.context import make_context
    from ui.fields import config_from_values

    ctx = make_context(workspace)
    cfg = config_from_values({**ctx.defaults, **fields(steps)}, workspace / "runs-a")
    path = workspace / "bench.toml"
    save_config(cfg, path)
    subprocess.run([sys.executable, "-m", "trainer", "train", str(path), "--quiet"], cwd=REPO, env=ENV,
                   check=True, stdout=subprocess.DEVNULL)
    return throughput(newest_run(workspace / "runs-a"))


def run_watched(workspace: Path, steps: int, port: int) -> tuple[float, float]:
    from gradio_client import Client

    app = subprocess.Popen([sys.executable, "app.py", "--workspace", str(workspace), "--port", str(port)],
                           cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = _connect(Client, f"http://127.0.0.1:{port}/")
        client.predict(api_name="/start", **fields(steps))
        latencies = []
        while True:
            t0 = time.perf_counter()
            client.predict(api_name="/poll")
            latencies.append(time.perf_counter() - t0)
            status = client.predict(api_name="/status") if len(latencies) % 5 == 0 else None
            if status and not status["active"] and status["status"] not in ("idle", "starting"):
                break
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
        return throughput(newest_run(workspace / "runs")), statistics.median(latencies)
    finally:
        app.terminate()
        app.wait(30)


def _connect(client_cls, url: str, timeout: float = 120.0):
    deadline = time.time() + timeout
    while True:
        try:
            return client_cls(url, verbose=False)
        except Exception:  # the server is still starting
            if time.time() > deadline:
                raise
            time.sleep(1.0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--port", type=int, default=7871)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads in both runs (0 = torch's default)")
    args = p.parse_args()
    if args.threads > 0:
        ENV.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    headless, watched, polls = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-polling-") as tmp:
        for i in range(args.pairs):
            order = ("A", "B") if i % 2 == 0 else ("B", "A")  # alternate which goes first
            for which in order:
                ws = Path(tmp) / f"{which}{i}"
                if which == "A":
                    headless.append(run_headless(ws, args.steps))
                    print(f"pair {i + 1} A headless        {headless[-1]:.3f} it/s", flush=True)
                else:
                    tp, lat = run_watched(ws, args.steps, args.port)
                    watched.append(tp)
                    polls.append(lat)
                    print(f"pair {i + 1} B app + 1 Hz tab  {tp:.3f} it/s  (poll median {1000 * lat:.0f} ms)",
                          flush=True)
    a, b = statistics.median(headless), statistics.median(watched)
    pair_ratios = [w / h for h, w in zip(headless, watched)]
    print(f"\nmedian headless {a:.3f} it/s   app + tab {b:.3f} it/s   ratio {b / a:.3f} (target >= 0.95)")
    print("per-pair ratios " + " ".join(f"{r:.3f}" for r in pair_ratios)
          + f"   median {statistics.median(pair_ratios):.3f} (a pair runs back to back: less exposed to load drift)")
    print(f"poll round trip median {1000 * statistics.median(polls):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
