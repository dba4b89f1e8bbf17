"""Does watching a run slow it down? Training throughput headless (the CLI) against the app with one tab
polling it at 1 Hz, alternating A/B runs of the same tiny config, medians and the ratio (target >= 0.95).

    python bench/bench_polling.py [--pairs 3] [--steps 40] [--threads 1] [--client http|gradio]

A: ``python -m trainer train config.toml`` in its own process.
B: ``python app.py`` in its own process, the run started through its API, and this process polling the app's
   ``/poll`` endpoint (the one every browser tab calls, figures and all) once a second until the run ends. The
   poller speaks the browser's own protocol (queue/join and the SSE stream, one session, so the tab's state
   works as in a browser) over plain HTTP; ``--client gradio`` uses gradio_client instead, whose own CPU use
   (~50 ms a call) competes with the run on a small machine.

Two measures per run, both over the steady steps (the first few, with warm-up, are left out):
- throughput: 1 / median seconds per optimizer step, from the run's metrics.jsonl;
- CPU per step: the training process's CPU seconds (the app's, serving the polls, in B) per step, read from
  /proc. On a machine shared with other jobs throughput swings with their load; CPU per step barely does, so
  its A/B ratio is the steadier view of what the polling costs.
``--threads`` caps torch's CPU threads in both (OMP_NUM_THREADS): on a shared CPU, spinning OpenMP threads
otherwise make single runs 10-30x slower at random (0 leaves torch's default). Not a test: nothing asserted.
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
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SKIP_FIRST = 3
ENV: dict[str, str] = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
                       "DIFFUSERS_VERBOSITY": "error", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(REPO)}


def fields(steps: int) -> dict:
    """The run, as the UI's fields (B) and, through the same table, as a config file (A)."""
    # tiny-sd15 has two levels: its last up block stands for the demo preset's up_blocks.2 and .3
    return {"max_steps": steps, "save_every": 0, "sample_enabled": False, "batch_size": 2, "base": "tiny-sd15",
            "conv_blocks": "up_blocks.1", "run_name": "bench"}


def throughput(run_dir: Path) -> float:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    secs = [r["sec_per_step"] for r in rows[SKIP_FIRST:] if not r.get("skipped")]
    return 1.0 / statistics.median(secs)


class CpuMeter:
    """CPU seconds of one process between its run's step SKIP_FIRST and its last step."""

    def __init__(self, pid: int, runs: Path, steps: int):
        self.pid, self.runs, self.steps = pid, runs, steps
        self.start: tuple[int, float] | None = None
        self.end: tuple[int, float] | None = None

    def _cpu(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields_ = f.read().rsplit(")", 1)[1].split()
        return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")

    def update(self) -> bool:
        """Look once; True when the last step has been seen."""
        metrics = list(self.runs.glob("*/*/metrics.jsonl"))
        rows = metrics[0].read_bytes().count(b"\n") if metrics else 0
        try:
            if self.start is None and rows >= SKIP_FIRST:
                self.start = (rows, self._cpu())
            if self.start is not None and rows >= self.steps and self.end is None:
                self.end = (rows, self._cpu())
        except FileNotFoundError:  # the process has ended
            return True
        return self.end is not None

    def per_step(self) -> float:
        if self.start is None or self.end is None or self.end[0] <= self.start[0]:
            return float("nan")
        return (self.end[1] - self.start[1]) / (self.end[0] - self.start[0])


def run_headless(workspace: Path, steps: int) -> tuple[float, float]:
    from trainer.config.schema import save_config
    from ui.context import make_context
    from ui.fields import config_from_values

    ctx = make_context(workspace)
    runs = workspace / "runs-a"
    cfg = config_from_values({**ctx.defaults, **fields(steps)}, runs)
    path = workspace / "bench.toml"
    save_config(cfg, path)
    proc = subprocess.Popen([sys.executable, "-m", "trainer", "train", str(path), "--quiet"], cwd=REPO, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    meter = CpuMeter(proc.pid, runs, steps)
    while proc.poll() is None and not meter.update():
        time.sleep(0.05)
    if proc.wait() != 0:
        raise SystemExit(f"the headless run failed (exit {proc.returncode})")
    return throughput(next(runs.glob("*/*/metrics.jsonl")).parent), meter.per_step()


class BrowserLikePoller:
    """One tab's poll, as the page sends it: join the queue with the session's hash, read the SSE stream until
    the event completes. The tab's ``poll_state`` lives on the server under that session."""

    def __init__(self, url: str):
        import httpx

        self.url, self.http = url, httpx.Client(timeout=30)
        config = self.http.get(url + "config").json()
        dep = next(d for d in config["dependencies"] if d.get("api_name") == "poll")
        kinds = {c["id"]: c["type"] for c in config["components"]}
        self.fn_index = dep["id"]
        self.data = ["en" if kinds[i] == "radio" else None for i in dep["inputs"]]  # lang, then the tab's state
        self.session = uuid.uuid4().hex

    def __call__(self) -> None:
        self.http.post(self.url + "gradio_api/queue/join", json={
            "data": self.data, "fn_index": self.fn_index, "session_hash": self.session, "event_data": None,
            "trigger_id": None}).raise_for_status()
        with self.http.stream("GET", self.url + f"gradio_api/queue/data?session_hash={self.session}") as r:
            for line in r.iter_lines():
                if line.startswith("data:") and '"process_completed"' in line:
                    return


def run_watched(workspace: Path, steps: int, port: int, client_kind: str) -> tuple[float, float, float]:
    from gradio_client import Client

    app = subprocess.Popen([sys.executable, "app.py", "--workspace", str(workspace), "--port", str(port)],
                           cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        client = _connect(Client, url)
        poll = BrowserLikePoller(url) if client_kind == "http" else (lambda: client.predict(api_name="/poll"))
        client.predict(api_name="/start", **fields(steps))
        meter = CpuMeter(app.pid, workspace / "runs", steps)
        latencies = []
        while True:
            t0 = time.perf_counter()
            poll()
            latencies.append(time.perf_counter() - t0)
            if meter.update():
                break
            time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
        while client.predict(api_name="/status")["active"]:
            time.sleep(0.5)
        run = next((workspace / "runs").glob("*/*/metrics.jsonl")).parent
        return throughput(run), meter.per_step(), statistics.median(latencies)
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
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--port", type=int, default=7871)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads in both runs (0 = torch's default)")
    p.add_argument("--client", choices=["http", "gradio"], default="http", help="how the tab polls (see above)")
    args = p.parse_args()
    if args.threads > 0:
        ENV.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    a_tp, b_tp, a_cpu, b_cpu, polls = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-polling-") as tmp:
        for i in range(args.pairs):
            for which in (("A", "B") if i % 2 == 0 else ("B", "A")):  # alternate which goes first
                ws = Path(tmp) / f"{which}{i}"
                if which == "A":
                    tp, cpu = run_headless(ws, args.steps)
                    a_tp.append(tp)
                    a_cpu.append(cpu)
                    print(f"pair {i + 1} A headless        {tp:6.3f} it/s  {1000 * cpu:6.1f} ms CPU/step", flush=True)
                else:
                    tp, cpu, lat = run_watched(ws, args.steps, args.port, args.client)
                    b_tp.append(tp)
                    b_cpu.append(cpu)
                    polls.append(lat)
                    print(f"pair {i + 1} B app + 1 Hz tab  {tp:6.3f} it/s  {1000 * cpu:6.1f} ms CPU/step"
                          f"  (poll round trip {1000 * lat:.0f} ms)", flush=True)
    a, b = statistics.median(a_tp), statistics.median(b_tp)
    pair_ratios = [w / h for h, w in zip(a_tp, b_tp)]
    print(f"\nthroughput  median headless {a:.3f} it/s, app + tab {b:.3f} it/s: ratio {b / a:.3f} (target >= 0.95)")
    print("            per pair " + " ".join(f"{r:.3f}" for r in pair_ratios)
          + f", median {statistics.median(pair_ratios):.3f}")
    ca, cb = statistics.median(a_cpu), statistics.median(b_cpu)
    print(f"CPU/step    median headless {1000 * ca:.1f} ms, app + tab {1000 * cb:.1f} ms: "
          f"throughput-equivalent ratio {ca / cb:.3f}")
    print(f"poll round trip median {1000 * statistics.median(polls):.0f} ms ({args.client} client)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
