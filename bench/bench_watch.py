"""Does an open Train tab slow the run it shows? The demo run (the app's defaults), started with the Start button
in headless Chromium, with its Train tab left open until the run ends, against the same run whose page goes to
about:blank right after Start; several pairs, alternating which goes first. Target: pooled ratio >= 0.95.

    python bench/bench_watch.py [--pairs 3] [--steps 0] [--from-step 50] [--threads 0] [--quiet-load 1.0]

Each run: ``python app.py`` in its own process and workspace, one Chromium page that opens it, waits for the
first scan, sets the steps (``--steps``; 0 = the whole demo run, 1392 steps) and presses Start on the Train step
as a user does. "open" keeps that page on the Train step until the run ends; "closed" sends it to about:blank.

Printed per run and per pair, and pooled over all pairs:
- throughput from the run's own metrics.jsonl: the steps from ``--from-step`` on divided by the sum of their
  sec_per_step (the training loop's own clock: samples, saves and validation between steps are left out);
- per pair: open / closed; pooled: (all open steps / all their seconds) / (the same for closed), and the
  spread of the pair ratios (lowest, highest, standard deviation);
- CPU seconds per step of the app's process (training and serving the polls) and of the whole browser;
- open only: the page's elements, DOM nodes (CDP, after a forced garbage collection) and JS heap once the
  first points are drawn and again after the run ended.
Other jobs on the machine distort the ratio: before the first run it waits (at most ``--quiet-wait`` seconds)
for the 1-minute load average to fall below ``--quiet-load`` and says whether it did. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_polling import ENV, REPO, SKIP_FIRST, CpuMeter, _connect

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


def steady_seconds(run_dir: Path, from_step: int) -> tuple[int, float]:
    """(steps, the sum of their sec_per_step) over the applied steps from ``from_step`` on."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    secs = [r["sec_per_step"] for r in rows if r["step"] >= from_step and not r.get("skipped")]
    return len(secs), sum(secs)


def page_figures(page, cdp) -> dict[str, float]:
    """Elements in the document, the renderer's DOM nodes and JS heap after a forced garbage collection."""
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {"elements": page.evaluate("document.getElementsByTagName('*').length"), "nodes": metrics["Nodes"],
            "heap_mib": metrics["JSHeapUsedSize"] / 2**20}


def loss_points(page) -> int:
    return page.evaluate("""() => { const p = document.querySelector('#ld-loss .js-plotly-plot');
        return p && p.data && p.data.length ? p.data[0].x.length : 0; }""")


def browser_cpu(session) -> float:
    return sum(p["cpuTime"] for p in session.send("SystemInfo.getProcessInfo")["processInfo"])


def start_in_the_page(page, url: str, steps: int) -> None:
    """Open the app, wait for its first scan, set the steps, and press Start on the Train step."""
    page.goto(url)
    page.wait_for_function("() => document.body.innerText.includes('usable pictures')", timeout=120_000)
    if steps:
        page.get_by_role("tab", name=re.compile("Steps")).click()
        box = page.locator("#ld-f-max_steps input").first
        box.fill(str(steps))
        box.press("Tab")
        page.wait_for_timeout(800)
    page.get_by_role("tab", name=re.compile("Train")).click()
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function("() => document.body.innerText.includes('Training started')", timeout=120_000)


def one_run(mode: str, workspace: Path, steps: int, from_step: int, port: int, browser) -> dict:
    from gradio_client import Client

    app = subprocess.Popen([sys.executable, "app.py", "--workspace", str(workspace), "--port", str(port)],
                           cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        url = f"http://127.0.0.1:{port}/"
        client = _connect(Client, url)
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        session = browser.new_browser_cdp_session()
        start_in_the_page(page, url, steps)
        if mode == "closed":
            page.goto("about:blank")
        while (status := client.predict(api_name="/status"))["total_steps"] == 0 and status["active"]:
            time.sleep(0.5)
        total = status["total_steps"]
        meter = CpuMeter(app.pid, workspace / "runs", total)
        out: dict = {}
        start_cpu = start_time = None
        while not meter.update():
            if meter.start is not None and start_cpu is None:
                start_cpu, start_time = browser_cpu(session), time.perf_counter()
            if mode == "open" and "start" not in out and loss_points(page) >= 2 * SKIP_FIRST:
                out["start"] = page_figures(page, cdp)
            time.sleep(0.5)
        end_cpu, end_time = browser_cpu(session), time.perf_counter()
        while client.predict(api_name="/status")["active"]:
            time.sleep(0.5)
        if mode == "open":
            page.wait_for_timeout(3000)  # the last polls land
            out["end"] = page_figures(page, cdp)
            out["points"] = loss_points(page)
        run = next((workspace / "runs").glob("*/*/metrics.jsonl")).parent
        out["steady_steps"], out["steady_sec"] = steady_seconds(run, from_step)
        counted = meter.end[0] - meter.start[0]
        if not out["steady_steps"]:
            raise SystemExit(f"the run has no steps from {from_step} on: give more --steps or a lower --from-step")
        out.update(steps=total, it_s=out["steady_steps"] / out["steady_sec"], app_cpu=meter.per_step(),
                   wall_it_s=counted / (end_time - start_time), browser_cpu=(end_cpu - start_cpu) / counted)
        return out
    finally:
        context.close()
        app.terminate()
        app.wait(30)


def pooled(runs: list[dict]) -> float:
    return sum(r["steady_steps"] for r in runs) / sum(r["steady_sec"] for r in runs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--steps", type=int, default=0, help="cap the demo run at this many steps (0 = the whole run)")
    p.add_argument("--from-step", type=int, default=50, help="throughput counts the steps from this one on")
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
                r = one_run(mode, Path(tmp) / f"{mode}{i}", args.steps, args.from_step, args.port, browser)
                results[mode].append(r)
                line = (f"pair {i + 1} {mode:6s} {r['steps']} steps  {r['it_s']:6.2f} it/s over steps >= "
                        f"{args.from_step} (wall {r['wall_it_s']:5.2f})  app {1000 * r['app_cpu']:5.1f} ms CPU/step  "
                        f"browser {1000 * r['browser_cpu']:5.1f} ms CPU/step")
                if mode == "open" and r.get("start"):
                    s, e = r["start"], r["end"]
                    line += (f"\n              page start -> end: {s['elements']} -> {e['elements']} elements, "
                             f"{s['nodes']:.0f} -> {e['nodes']:.0f} DOM nodes, {s['heap_mib']:.1f} -> "
                             f"{e['heap_mib']:.1f} MiB JS heap; {r['points']} loss points drawn")
                print(line, flush=True)
            o, c = results["open"][-1], results["closed"][-1]
            print(f"pair {i + 1} ratio open / closed: {o['it_s'] / c['it_s']:.3f}", flush=True)
        browser.close()
    opened, closed = results["open"], results["closed"]
    ratios = [o["it_s"] / c["it_s"] for o, c in zip(opened, closed)]
    spread = (f"lowest {min(ratios):.3f}, highest {max(ratios):.3f}"
              + (f", sd {statistics.stdev(ratios):.3f}" if len(ratios) > 1 else ""))
    print(f"\npooled      tab open / closed: {pooled(opened):.2f} / {pooled(closed):.2f} it/s = "
          f"{pooled(opened) / pooled(closed):.3f} (target >= 0.95); pairs {' '.join(f'{x:.3f}' for x in ratios)} "
          f"({spread})")

    def median(rs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rs)

    print(f"CPU/step    app {1000 * median(opened, 'app_cpu'):.1f} vs {1000 * median(closed, 'app_cpu'):.1f} ms, "
          f"browser {1000 * median(opened, 'browser_cpu'):.1f} vs {1000 * median(closed, 'browser_cpu'):.1f} ms")
    starts, ends = [r["start"] for r in opened if r.get("start")], [r["end"] for r in opened if r.get("start")]
    if starts:
        print(f"page        DOM nodes {statistics.median(s['nodes'] for s in starts):.0f} at the start, "
              f"{statistics.median(e['nodes'] for e in ends):.0f} at the end; JS heap "
              f"{statistics.median(s['heap_mib'] for s in starts):.1f} -> "
              f"{statistics.median(e['heap_mib'] for e in ends):.1f} MiB (target: flat)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
