"""What masked training costs: the demo run with ``dataset.masked_loss`` on against off, side by side.

    python bench/bench_masked.py [--threads 2] [--pairs 1] [--steps 0]

Each run is the README's default demo run (preset ``demo-character``) in its own process, alternating on and off so
a busy machine slows both alike; for the masked runs every character picture has a mask beside it
(``x-masklabel.png``: an ellipse over the middle of the picture), so every step weighs its loss. The finishing
run's larger draw of the saves its judge reads near its line is off in both (``measure.edge_pictures = 0``): whether
it draws depends on what a run's pictures read, not on the masks. Printed: wall time of each run and the on/off
ratio. ``--steps N`` trains N steps instead of the preset's. Measure alone: two torch
processes on 2 cores slow each other far more than 2x. Nothing is asserted.
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
from PIL import Image, ImageDraw
for p in sorted(q for q in (root / "data").rglob("*.png") if not q.stem.endswith("-masklabel")):
    if not p.with_name(p.stem + "-masklabel.png").is_file():
        w, h = Image.open(p).size
        mask = Image.new("L", (w, h), 0)
        ImageDraw.Draw(mask).ellipse((w // 5, h // 8, w - w // 5, h - h // 8), fill=255)
        mask.save(p.with_name(p.stem + "-masklabel.png"))
raw = {{"preset": "demo-character", "dataset": {{"path": str(root / "data"), "trigger": "zxc",
       "reg_path": str(root / "prior"), "masked_loss": {masked}}}, "save": {{"output_dir": str(root / "runs-{label}")}},
       "measure": {{"edge_pictures": 0}}}}  # the finishing run's larger draw depends on what its pictures read
if {steps}:
    raw["train"] = {{"max_steps": {steps}}}
t0 = time.perf_counter()
result = run_training(from_dict(raw))
print(json.dumps({{"wall": time.perf_counter() - t0, "status": result.status}}))
"""


def one(label: str, masked: bool, root: Path, threads: int, steps: int) -> dict:
    code = CHILD.format(repo=str(REPO), threads=threads, root=str(root), label=label, masked=masked, steps=steps)
    return run_child(code, threads)


def main() -> int:
    ap = demo_parser(__doc__)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ons, offs = [], []
        for i in range(args.pairs):
            for masked in ((True, False) if i % 2 == 0 else (False, True)):
                r = one(f"{'on' if masked else 'off'}{i}", masked, root, args.threads, args.steps)
                (ons if masked else offs).append(r["wall"])
                print(f"pair {i + 1}: masked training {'on ' if masked else 'off'}: {r['wall']:.1f} s ({r['status']})",
                      flush=True)
        on, off = sum(ons) / len(ons), sum(offs) / len(offs)
        print(f"demo run, masked training on/off: {on:.1f} s / {off:.1f} s = {on / off:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
