"""What finding near copies costs the scan: a folder scanned with the thumbnails on against off, side by side.

    python bench/bench_scan.py [--pictures 24] [--size 2048 1536] [--rounds 3]

The folder holds ``--pictures`` PNG pictures and the same pictures again as JPEG (quality 90), so every JPEG is a
near copy of its PNG (the scan names each: the count is printed as a check). Rounds alternate off and on, after
one scan that warms the file cache; printed: each round's seconds and the ratio of the medians. The thumbnail
(``trainer/data/near_copies.py``) is read from the picture the scan has already decoded, so it should cost little
beside the decode. Measure alone. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def write_folder(root: Path, pictures: int, size: tuple[int, int]) -> Path:
    import numpy as np
    from PIL import Image

    folder = root / "10_zxc"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(pictures):
        im = Image.fromarray((rng.random((96, 96, 3)) * 255).astype(np.uint8)).resize(size, Image.Resampling.BICUBIC)
        for suffix, kw in ((".png", {}), (".jpg", {"quality": 90})):
            im.save(folder / f"p{i:03}{suffix}", **kw)
            (folder / f"p{i:03}{suffix}").with_suffix(".txt").write_text("zxc", encoding="utf-8")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pictures", type=int, default=24)
    ap.add_argument("--size", type=int, nargs=2, default=[2048, 1536])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from trainer.data import near_copies, scan

    with tempfile.TemporaryDirectory() as tmp:
        root = write_folder(Path(tmp), args.pictures, tuple(args.size))
        real = near_copies.thumbnail

        def timed(on: bool) -> tuple[float, int]:
            scan.thumbnail = real if on else (lambda im: None)  # type: ignore[assignment]
            t0 = time.perf_counter()
            report = scan.scan_dataset(path=str(root), trigger="zxc", resolution=512)
            return time.perf_counter() - t0, report.problem_counts.get("near_copy", 0)

        timed(False)  # the file cache warmed for both sides
        seconds: dict[bool, list[float]] = {False: [], True: []}
        copies = 0
        for _ in range(args.rounds):
            for on in (False, True):
                s, found = timed(on)
                seconds[on].append(s)
                copies = found if on else copies
        scan.thumbnail = real
    off, on = statistics.median(seconds[False]), statistics.median(seconds[True])
    print(f"{2 * args.pictures} pictures at {args.size[0]}x{args.size[1]}: near copies named {copies} "
          f"(of {args.pictures})")
    print("thumbnails off:", " ".join(f"{s:.2f}" for s in seconds[False]), "s")
    print("thumbnails on: ", " ".join(f"{s:.2f}" for s in seconds[True]), "s")
    print(f"on / off (medians): {on / off:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
