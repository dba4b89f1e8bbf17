"""What the doctor's model measures cost: the demo run with them on against off, side by side.

    python bench/bench_measures.py [--threads 2] [--pairs 1] [--steps 0] [--edge] [--seed 42]

Each run is the README's default demo run (preset ``demo-character``: the character's 20 pictures, the 30 prior
scenes, checkpoints and samples at 400 / 800 / 1200 / 1392 steps) in its own process, alternating on and off so a
busy machine slows both alike. Printed: wall time of each run, the seconds the measures themselves took (from
``measures.jsonl``) and the on/off ratio. ``--steps N`` trains N steps instead of the preset's (a quick look).
``--edge`` compares the finishing run's larger draw of the saves the demo's judge reads near its line instead
(``measure.edge_pictures`` at its default against 0, measures on in both; ``--seed 1`` draws two saves, 42 one),
with the seconds the drawing took from its progress events.
Measure alone: two torch processes on 2 cores slow each other far more than 2x. Nothing is asserted.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from demo_child import HEAD, demo_parser, run_child  # noqa: E402

CHILD = HEAD + r"""
raw = {{"preset": "demo-character", "dataset": {{"path": str(root / "data"), "trigger": "zxc",
       "reg_path": str(root / "prior")}}, "save": {{"output_dir": str(root / "runs-{label}")}},
       "measure": {measure}, "train": {{"seed": {seed}}}}}
if {steps}:
    raw["train"]["max_steps"] = {steps}
drawing = []
t0 = time.perf_counter()
result = run_training(from_dict(raw), lambda ev: drawing.append(ev.seconds) if getattr(ev, "task", None) == "edge_pictures" else None)
wall = time.perf_counter() - t0
rows = [json.loads(l) for l in open(result.run_dir / "measures.jsonl")] if (result.run_dir / "measures.jsonl").is_file() else []
print(json.dumps({{"wall": wall, "status": result.status, "measured": sum(r["seconds"] for r in rows),
                   "points": len(rows), "drawing": max(drawing, default=0.0)}}))
"""


def one(label: str, enabled: bool, root: Path, threads: int, steps: int, edge: bool = False, seed: int = 42) -> dict:
    measure = (({} if enabled else {"edge_pictures": 0}) if edge
               else {"enabled": enabled, "edge_pictures": 0})  # the measures alone: no larger draw in either
    code = CHILD.format(repo=str(REPO), threads=threads, root=str(root), label=label, measure=repr(measure),
                        steps=steps, seed=seed)
    return run_child(code, threads)


def main() -> int:
    ap = demo_parser(__doc__)
    ap.add_argument("--edge", action="store_true", help="compare the larger draw at the end instead of the measures")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    what = "edge drawing" if args.edge else "measures"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ons, offs = [], []
        for i in range(args.pairs):
            for enabled in ((True, False) if i % 2 == 0 else (False, True)):
                r = one(f"{'on' if enabled else 'off'}{i}", enabled, root, args.threads, args.steps, args.edge,
                        args.seed)
                (ons if enabled else offs).append(r)
                itself = (f"the drawing itself: {r['drawing']:.1f} s" if args.edge
                          else f"the measures themselves: {r['measured']:.1f} s at {r['points']} points")
                print(f"pair {i + 1}: {what} {'on ' if enabled else 'off'}: {r['wall']:.1f} s"
                      + (f" ({itself})" if enabled else ""), flush=True)
        on = sum(r["wall"] for r in ons) / len(ons)
        off = sum(r["wall"] for r in offs) / len(offs)
        measured = sum(r["drawing" if args.edge else "measured"] for r in ons) / len(ons)
        print(f"demo run (seed {args.seed}), {what} on/off: {on:.1f} s / {off:.1f} s = {on / off:.3f} "
              f"({what} {measured:.1f} s = {measured / off:.1%} of the run without it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
