#!/usr/bin/env python
"""Does the doctor's calibration carry over to a subject it was not set on?

    python scripts/doctor_second_subject.py                  # train what is missing, then print the table
    python scripts/doctor_second_subject.py --print-only --grid docs/images/second-subject.jpg
    python scripts/doctor_second_subject.py --subject style  # a style instead: where the model measures fall short

The doctor's lines (trigger hold, prior drift, burn) were set on the demo character's pictures in a plain folder
(scripts/doctor_calibration.py). This trains a second subject the demo world's base model has never seen (a
teal disc with two eyes and an orange beak, trigger ``qwv``, 20 pictures on the same backgrounds as the
character's, the same prior scenes) with the same ``demo-character`` preset at 0.1x, 1x and 10x its lr, at 1x
without prior images and at 1x on six of its pictures (33 repeats: the same steps), and prints how the app judges each save from its model measures alone, the run's verdict,
its warnings and the diagnosis's first cause in both languages. The sample prompts ask for a background and a
place the data never showed (snow, the night sky). No hand-written measure of this subject decides anything: the
``look`` columns (the share of the subject's colours in the trigger samples against the training pictures', and
in the no-trigger samples) are a reader's aid, and ``--grid`` draws the saves' pictures to look at.

``--subject style``: the world's own scenes in a two-tone palette (dark purple and orange, captions naming the
shape, place and size after the trigger) at 0.1x and 1x, and 1x without prior images. A flat two-tone picture is
easy to denoise once seen, so the trigger hold reads high on every save whether or not the trigger alone draws
the palette: what docs/doctor.md says of styles.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from calibration_folders import write_plain_folders
from doctor_calibration import VERDICT_HEADER, run_config, verdict_row
from PIL import Image, ImageDraw

import words  # noqa: F401  run folders hold their messages worded, as the app and the CLI write them

TRIGGER = "qwv"
PROMPTS = {  # the trigger alone, two asks the data never showed, one prompt without the trigger
    "disc": ["{trigger}", "{trigger}, on snow, right", "{trigger}, on night, top, large", "a red circle on grass, left, small"],
    "style": ["{trigger}", "{trigger}, a ring, right, small", "{trigger}, a star, bottom, large",
              "a red circle on grass, left, small"],
}
RUNS = {  # subject -> name -> (lr factor, settings)
    "disc": {"lr0.1x": (0.1, {}), "lr1x": (1.0, {}), "lr10x": (10.0, {}), "lr1x-no-prior": (1.0, {"dataset.reg_path": ""}),
             "lr1x-six": (1.0, {"dataset.path": "my-disc-6"})},  # six of the pictures, 33 repeats: the same steps
    "style": {"lr0.1x": (0.1, {}), "lr1x": (1.0, {}), "lr1x-no-prior": (1.0, {"dataset.reg_path": ""})},
}
DISC = (20, 185, 185)
TWO_TONE = (np.array([60.0, 20.0, 90.0]), np.array([250.0, 170.0, 60.0]))  # the style's dark and light ends


def draw_subject(background: str, position: str, size: str, rng: np.random.Generator, side: int = 64) -> Image.Image:
    """The subject on one of the world's backgrounds, a little jittered as the world's own pictures are."""
    from trainer.demo.world import BACKGROUNDS, POSITIONS, SUPERSAMPLE

    big = side * SUPERSAMPLE
    img = Image.new("RGB", (big, big), tuple(int(np.clip(c + rng.integers(-6, 7), 0, 255)) for c in BACKGROUNDS[background]))
    draw = ImageDraw.Draw(img)
    scale = {"small": 0.34, "large": 0.52}[size] * (1 + rng.uniform(-0.08, 0.08))
    half = scale / 2 + 0.02
    fx, fy = (float(np.clip(f + rng.uniform(-0.03, 0.03), half, 1 - half)) for f in POSITIONS[position])
    cx, cy, r = fx * big, fy * big, scale * big / 2
    draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=DISC)
    draw.polygon([(cx - 0.18 * r, cy + 0.05 * r), (cx + 0.18 * r, cy + 0.05 * r), (cx, cy + 0.45 * r)], fill=(245, 130, 20))
    for sx in (-1, 1):
        ex, ey, er = cx + sx * 0.35 * r, cy - 0.25 * r, 0.16 * r
        draw.ellipse([ex - er, ey - er, ex + er, ey + er], fill=(248, 248, 248))
        draw.ellipse([ex - er / 2, ey - er / 2, ex + er / 2, ey + er / 2], fill=(22, 22, 22))
    return img.resize((side, side), Image.Resampling.BOX)


def write_subject(root: Path, n: int = 20) -> Path:
    """``root/my-disc/10_qwv``: ``n`` pictures captioned "qwv, on <background>, <position>, <size>"; and
    ``root/my-disc-6/33_qwv``: six of them, a small dataset as many users have one."""
    from trainer.demo.world import SIZES, TRAIN_BACKGROUNDS, TRAIN_POSITIONS

    data, folder = root / "my-disc", root / "my-disc" / f"10_{TRIGGER}"
    if not data.is_dir():
        folder.mkdir(parents=True)
        rng = np.random.default_rng(3)
        combos = [(b, p, s) for b in TRAIN_BACKGROUNDS for p in TRAIN_POSITIONS for s in SIZES]
        order = [combos[i] for _ in range(2) for i in rng.permutation(len(combos))]
        for i, (background, position, size) in enumerate(order[:n]):
            draw_subject(background, position, size, rng).save(folder / f"{TRIGGER}_{i:03d}.png")
            (folder / f"{TRIGGER}_{i:03d}.txt").write_text(f"{TRIGGER}, on {background}, {position}, {size}\n")
    six = root / "my-disc-6" / f"33_{TRIGGER}"
    if not six.is_dir():
        six.mkdir(parents=True)
        for i in range(0, 18, 3):
            for ext in (".png", ".txt"):
                shutil.copy(folder / f"{TRIGGER}_{i:03d}{ext}", six / f"{TRIGGER}_{i:03d}{ext}")
    return data


def two_tone(img: Image.Image) -> Image.Image:
    """A picture in the style: its light and dark mapped onto the two tones."""
    a = np.asarray(img.convert("RGB")).astype(float)
    luma = (a @ np.array([0.299, 0.587, 0.114])) / 255.0
    luma = (luma - luma.min()) / max(1e-6, float(luma.max() - luma.min()))
    low, high = TWO_TONE
    return Image.fromarray((low + (high - low) * luma[..., None]).astype(np.uint8))


def write_style(root: Path, n: int = 20) -> Path:
    """``root/my-style/10_qwv``: ``n`` world scenes in two tones, captioned "qwv, a <shape>, <place>, <size>" (the
    colours they no longer have left out)."""
    from trainer.demo.world import world_dataset

    data = root / "my-style"
    if data.is_dir():
        return data
    folder = data / f"10_{TRIGGER}"
    folder.mkdir(parents=True)
    for i, (img, caption) in enumerate(world_dataset(n, seed=5)):
        two_tone(img).save(folder / f"{TRIGGER}_{i:03d}.png")
        found = re.match(r"an? \w+ (\w+) on \w+, (.*)", caption)
        (folder / f"{TRIGGER}_{i:03d}.txt").write_text(f"{TRIGGER}, a {found.group(1)}, {found.group(2)}\n" if found
                                                       else f"{TRIGGER}, {caption}\n")
    return data


def look_share(img: Image.Image, subject: str) -> float:
    """The share of the picture in the subject's colours: the teal disc, or near the style's two-tone line."""
    a = np.asarray(img.convert("RGB")).astype(float)
    if subject == "disc":
        return float((np.abs(a - np.array(DISC)).max(axis=-1) < 50).mean())
    low, high = TWO_TONE
    span = high - low
    t = np.clip(((a - low) @ span) / (span @ span), 0, 1)
    return float((np.linalg.norm(a - (low + t[..., None] * span), axis=-1) < 40).mean())


def run_dirs(work: Path, subject: str, seed: int) -> dict[str, Path]:
    out = {}
    for name in RUNS[subject]:
        found = sorted((work / "runs" / f"{subject}-{name}-seed{seed}").glob("*/*/final/lora.safetensors"))
        if found:
            out[name] = found[-1].parent.parent
    return out


def train_missing(work: Path, subject: str, data: Path, prior: Path, seed: int) -> None:
    from trainer.train.loop import run_training

    done = run_dirs(work, subject, seed)
    for name, (factor, extra) in RUNS[subject].items():
        if name in done:
            continue
        folder = work / "runs" / f"{subject}-{name}-seed{seed}"
        shutil.rmtree(folder, ignore_errors=True)
        cfg = run_config(data, prior, folder, factor, seed,
                         {"dataset.trigger": TRIGGER, "sample.prompts": PROMPTS[subject], **extra})
        t0 = time.perf_counter()
        result = run_training(cfg)
        print(f"{subject}-{name}-seed{seed}: {result.status} in {time.perf_counter() - t0:.0f} s", flush=True)


def report(work: Path, subject: str, data: Path, seed: int) -> None:
    from trainer.doctor.model_measures import measures_by_step
    from trainer.doctor.pictures import measure_steps
    from trainer.doctor.verdict import checkpoint_verdicts

    own = float(np.mean([look_share(Image.open(p), subject) for p in sorted(data.rglob("*.png"))]))
    lines = ["| run | step | trigger hold | prior drift | burn | look (trigger) | look (no trigger) | model verdict |",
             "|---|---|---|---|---|---|---|---|"]
    runs = list(VERDICT_HEADER)
    for name, run_dir in run_dirs(work, subject, seed).items():
        model, burn = measures_by_step(run_dir), {r["step"]: r["burn"] for r in measure_steps(run_dir)}
        for cv in checkpoint_verdicts(run_dir):
            m, folder = model.get(cv.step, {}), run_dir / "samples" / f"step-{cv.step:06d}"
            trig = [look_share(Image.open(p), subject) / own for p in sorted(folder.glob("0[012]_*.png"))]
            bare = [look_share(Image.open(p), subject) / own for p in sorted(folder.glob("03_*.png"))]
            lines.append(f"| {name} | {cv.step} | {m.get('trigger_hold', float('nan')):.3f} | "
                         f"{m.get('prior_drift', float('nan')):.2f} | {burn.get(cv.step) or 0:.2f} | "
                         f"{np.mean(trig):.2f} | {np.mean(bare):.2f} | {cv.label} |")
        runs.append(verdict_row(name, run_dir))
    print("\n".join(lines), "", "\n".join(runs), sep="\n")


def draw_grid(work: Path, subject: str, seed: int, out: Path) -> None:
    """Per run, side by side: its saves as rows (step 0 first), the first picture of each prompt as columns."""
    panels = []
    for run_dir in run_dirs(work, subject, seed).values():
        rows = []
        for folder in sorted((run_dir / "samples").glob("step-*")):
            firsts = [p for p in sorted(folder.glob("*.png")) if "_s" not in p.stem]
            rows.append([Image.open(p).convert("RGB").resize((64, 64)) for p in firsts])
        panel = Image.new("RGB", (64 * len(rows[0]), 64 * len(rows)), "white")
        for y, row in enumerate(rows):
            for x, im in enumerate(row):
                panel.paste(im, (64 * x, 64 * y))
        panels.append(panel)
    gap = 12
    grid = Image.new("RGB", (sum(p.width for p in panels) + gap * (len(panels) - 1), max(p.height for p in panels)), "white")
    x = 0
    for panel in panels:
        grid.paste(panel, (x, 0))
        x += panel.width + gap
    out.parent.mkdir(parents=True, exist_ok=True)
    grid.save(out, optimize=True, quality=90)  # quality: a .jpg
    print(f"pictures: {out} (runs left to right: {', '.join(run_dirs(work, subject, seed))}; rows: step 0 and each save)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("runs/doctor-second-subject"))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--subject", choices=sorted(RUNS), default="disc")
    ap.add_argument("--print-only", action="store_true")
    ap.add_argument("--grid", type=Path, default=None, metavar="PICTURE", help="draw the saves' pictures into this file (.png or .jpg)")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    _, prior = write_plain_folders(args.work)
    data = write_subject(args.work) if args.subject == "disc" else write_style(args.work)
    if not args.print_only:
        train_missing(args.work, args.subject, data, prior, args.seed)
    report(args.work, args.subject, data, args.seed)
    if args.grid is not None:
        draw_grid(args.work, args.subject, args.seed, args.grid)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
