"""Does an open Train tab slow the run it shows? The demo run (the app's defaults, as Start trains them) with
its Train tab open in headless Chromium against the same run with the page on about:blank, alternating; the
throughput ratio (target >= 0.95) and the page's DOM and JS heap at the start and the end of the run (target:
flat).

    python bench/bench_watch.py [--pairs 1] [--steps 0] [--threads 0] [--quiet-load 1.0] [--quiet-wait 600]

Each run: ``python app.py`` in its own process and workspace, the run started through its API with the demo's
defaults (``--steps`` caps it; 0 = the whole demo run, 1392 steps), and one Chromium page: "open" loads the app
as a user reopening it mid-run (it shows the running job's Train step and polls every second until the run
ends), "closed" sits on about:blank. Measured over the steady steps (the first few left out):
- throughput: 1 / median seconds per optimizer step (metrics.jsonl), and wall-clock steps per second (samples
  and checkpoints included);
- CPU seconds per step of the app's process (training and serving the polls) and of the whole browser;
- open only: elements in the document, all the renderer's DOM nodes (CDP ``Nodes``, after a forced garbage
  collection: what is kept, detached nodes included) and the JS heap in use, once the first points are drawn
  and again after the run has ended.
Other jobs on the machine distort the ratio: before the first run it waits (at most ``--quiet-wait`` seconds)
for the 1-minute load average to fall below ``--quiet-load`` and says whether it did. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_polling import ENV, REPO, SKIP_FIRST, CpuMeter, _connect, throughput

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"]


def wait_for_quiet(limit: float, patience: float) -> str:
    """Sleep until the 1-minute load average is below ``limit`` (at most ``patience`` seconds); says how it went."""
    deadline = time.time() + patience
    while True:
        load = os.getloadavg()[0]
        if load < limit:
            return f"quiet: 1-minute load {load:.2f} < {limit}"
        if time.time() > deadline:
            return f"NOT quiet: 1-minute load still {load:.2f} after {patience:.0f} s (figures distorted by other jobs)"
        time.sleep(10)


def page_figures(page, cdp) -> dict[str, float]:
    """Elements in the document, the renderer's DOM nodes and JS heap after a forced garbage collection."""
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {"elements": page.evaluate("document.getElementsByTagName('*').length"), "nodes": metrics["Nodes"],
            "heap_mib": metrics["JSHeapUsedSize"] / 2**20, "listeners": metrics["JSEventListeners"]}


def loss_points(page) -> int:
    return page.evaluate("""() => { const p = document.querySelector('#ld-loss .js-plotly-plot');
        return p && p.data && p.data.length ? p.data[0].x.length : 0; }""")


def browser_cpu(session) -> float:
    return sum(p["cpuTime"] for p in session.send("SystemInfo.getProcessInfo")["processInfo"])


def one_run(mode: str, workspace: Path, steps: int, port: int, browser) -> dict:
    from gradio_client import Client

    app = subprocess.Popen([sys.executable, "app.py", "--workspace", str(workspace), "--port", str(port)],
                           cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        url = f"http://127.0.0.1:{port}/"
        client = _connect(Client, url)
        client.predict(api_name="/start", **({"max_steps": steps} if steps else {}))
        while (status := client.predict(api_name="/status"))["total_steps"] == 0 and status["active"]:
            time.sleep(0.5)
        total = status["total_steps"]
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        session = browser.new_browser_cdp_session()
        page.goto(url if mode == "open" else "about:blank")
        meter = CpuMeter(app.pid, workspace / "runs", total)
        out: dict = {}
        start_cpu = start_time = None
        while not meter.update():
            if meter.start is not None and start_cpu is None:
                start_cpu, start_time = browser_cpu(session), time.perf_counter()
            if mode == "open" and "start" not in out and loss_points(page) >= 2 * SKIP_FIRST:
                out["start"] = page_figures(page, cdp)
            time.sleep(0.2)
        end_cpu, end_time = browser_cpu(session), time.perf_counter()
        while client.predict(api_name="/status")["active"]:
            time.sleep(0.5)
        if mode == "open":
            page.wait_for_timeout(3000)  # the last polls land
            out["end"] = page_figures(page, cdp)
            out["points"] = loss_points(page)
        run = next((workspace / "runs").glob("*/*/metrics.jsonl")).parent
        steady = meter.end[0] - meter.start[0]
        out.update(steps=total, it_s=throughput(run), app_cpu=meter.per_step(), wall_it_s=steady / (end_time - start_time),
                   browser_cpu=(end_cpu - start_cpu) / steady)
        return out
    finally:
        context.close()
        app.terminate()
        app.wait(30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="cap the demo run at this many steps (0 = the whole run)")
    p.add_argument("--port", type=int, default=7872)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads in the app (0 = torch's default)")
    p.add_argument("--quiet-load", type=float, default=1.0)
    p.add_argument("--quiet-wait", type=float, default=600.0)
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    if args.threads > 0:
        ENV.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    print(wait_for_quiet(args.quiet_load, args.quiet_wait), flush=True)
    results: dict[str, list[dict]] = {"open": [], "closed": []}
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        for i in range(args.pairs):
            for mode in ("open", "closed") if i % 2 == 0 else ("closed", "open"):
                r = one_run(mode, Path(tmp) / f"{mode}{i}", args.steps, args.port, browser)
                results[mode].append(r)
                line = (f"pair {i + 1} {mode:6s} {r['steps']} steps  {r['it_s']:6.2f} it/s (wall {r['wall_it_s']:5.2f})"
                        f"  app {1000 * r['app_cpu']:5.1f} ms CPU/step  browser {1000 * r['browser_cpu']:5.1f} ms CPU/step")
                if mode == "open" and r.get("start"):
                    s, e = r["start"], r["end"]
                    line += (f"\n              page start -> end: {s['elements']} -> {e['elements']} elements, "
                             f"{s['nodes']:.0f} -> {e['nodes']:.0f} DOM nodes, {s['heap_mib']:.1f} -> "
                             f"{e['heap_mib']:.1f} MiB JS heap, {s['listeners']:.0f} -> {e['listeners']:.0f} "
                             f"listeners; {r['points']} loss points drawn")
                print(line, flush=True)
        browser.close()
    opened, closed = results["open"], results["closed"]

    def median(rs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rs)

    ratio = median(opened, "it_s") / median(closed, "it_s")
    wall = median(opened, "wall_it_s") / median(closed, "wall_it_s")
    pairs = " ".join(f"{o['it_s'] / c['it_s']:.3f}" for o, c in zip(opened, closed))
    print(f"\nthroughput  tab open / closed: {ratio:.3f} (target >= 0.95; per pair {pairs}); wall clock {wall:.3f}")
    cpu_open = median(opened, "app_cpu") + median(opened, "browser_cpu")
    cpu_closed = median(closed, "app_cpu") + median(closed, "browser_cpu")
    print(f"CPU/step    app {1000 * median(opened, 'app_cpu'):.1f} vs {1000 * median(closed, 'app_cpu'):.1f} ms, "
          f"browser {1000 * median(opened, 'browser_cpu'):.1f} vs {1000 * median(closed, 'browser_cpu'):.1f} ms: "
          f"throughput-equivalent ratio {cpu_closed / cpu_open:.3f} (steadier than throughput on a shared machine)")
    starts, ends = [r["start"] for r in opened if r.get("start")], [r["end"] for r in opened if r.get("start")]
    if not starts:  # the run ended before the page drew its first points
        return 0
    print(f"page        DOM nodes {statistics.median(s['nodes'] for s in starts):.0f} at the start, "
          f"{statistics.median(e['nodes'] for e in ends):.0f} at the end; JS heap "
          f"{statistics.median(s['heap_mib'] for s in starts):.1f} -> {statistics.median(e['heap_mib'] for e in ends):.1f} MiB"
          " (target: flat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
