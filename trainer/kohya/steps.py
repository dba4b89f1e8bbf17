"""How many steps kohya would train on a dataset, counted its way, and where and why our plan differs.

Two counts exist on kohya's side (read in kohya_ss ``lora_gui.py`` ``train_model`` and sd-scripts
``train_util.py`` / ``train_network.py``):

- the kohya_ss GUI, when ``max_train_steps`` is 0 and no dataset config is given, passes
  ``ceil(Σ repeats × images ÷ batch ÷ accumulation × epochs × reg_factor)`` to sd-scripts as
  ``max_train_steps`` (images: ``.jpg .jpeg .png .webp`` in the ``N_name`` folders; ``reg_factor`` 2 when a
  regularisation folder is set). No buckets; sd-scripts then stops at that step.
- sd-scripts with ``max_train_epochs`` counts ``epochs × ceil(batches ÷ accumulation)``, where an epoch's
  batches are each bucket's pictures (repeats included, regularisation pictures repeated until they match
  the training pictures' count) divided by the batch size, rounded up per bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from trainer.message import Msg, msg

SD_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")  # sd-scripts globs these, lower or upper case
GUI_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")  # the GUI's own count, any case


@dataclass
class Subset:
    """One folder sd-scripts reads (``[[datasets.subsets]]``, or an ``N_name`` folder of train/reg_data_dir)."""

    image_dir: str
    num_repeats: int = 1
    is_reg: bool = False
    class_tokens: str = ""

    def images(self) -> list[Path]:
        """The pictures sd-scripts finds: top-level files only, suffixes all lower or all upper case."""
        d = Path(self.image_dir)
        if not d.is_dir():
            return []
        ok = set(SD_SUFFIXES) | {s.upper() for s in SD_SUFFIXES}
        return sorted(p for p in d.iterdir() if p.is_file() and p.suffix in ok)


def subsets_from_folders(train_dir: str, reg_dir: str = "") -> list[Subset]:
    """sd-scripts' reading of train_data_dir / reg_data_dir: subfolders named ``N_words``, N ≥ 1."""
    out: list[Subset] = []
    for base, is_reg in ((train_dir, False), (reg_dir, True)):
        if not base or not Path(base).is_dir():
            continue
        for d in sorted(Path(base).iterdir()):
            head, _, words = d.name.partition("_")
            if d.is_dir() and head.isdigit() and int(head) >= 1:
                out.append(Subset(str(d), int(head), is_reg, words))
    return out


def gui_image_repeats(train_dir: str) -> int:
    """Σ repeats × pictures as the kohya_ss GUI counts them for its max_train_steps."""
    total = 0
    for d in sorted(Path(train_dir).iterdir()) if train_dir and Path(train_dir).is_dir() else []:
        head = d.name.split("_")[0]
        if d.is_dir() and head.isdigit():
            total += int(head) * sum(1 for f in d.iterdir() if f.name.lower().endswith(GUI_SUFFIXES))
    return total


@dataclass
class BucketRules:
    """sd-scripts' bucket settings for one dataset."""

    width: int
    height: int
    enable: bool = False
    min_reso: int = 256
    max_reso: int = 1024
    step: int = 64
    no_upscale: bool = False

    def resolutions(self) -> list[tuple[int, int]]:
        area = self.width * self.height
        side = int(math.sqrt(area) // self.step) * self.step
        found = {(side, side)}
        w = self.min_reso
        while w <= self.max_reso:
            h = min(self.max_reso, int((area // w) // self.step) * self.step)
            if h >= self.min_reso:
                found |= {(w, h), (h, w)}
            w += self.step
        return sorted(found)

    def bucket(self, w: int, h: int, table: list[tuple[int, int]]) -> tuple[int, int]:
        """The bucket sd-scripts puts a ``w × h`` picture in."""
        if not self.enable:
            return (self.width, self.height)
        ratio = w / h
        if not self.no_upscale:
            if (w, h) in table:
                return (w, h)
            errors = [abs(bw / bh - ratio) for bw, bh in table]
            return table[errors.index(min(errors))]
        area = self.width * self.height
        if w * h > area:  # shrink to the area, keeping the shape; round one side to the step
            rw = math.sqrt(area * ratio)
            rh = area / rw
            bw = self._round(rw)
            ar_w = bw / self._round(bw / ratio)
            bh = self._round(rh)
            ar_h = self._round(bh * ratio) / bh
            w, h = ((bw, int(bw / ratio + 0.5)) if abs(ar_w - ratio) < abs(ar_h - ratio)
                    else (int(bh * ratio + 0.5), bh))
        return (w - w % self.step, h - h % self.step)

    def _round(self, x: float) -> int:
        n = int(x + 0.5)
        return n - n % self.step


@dataclass
class KohyaCount:
    """kohya's step count for one dataset and its settings."""

    total: int
    how: str
    """"gui" (the GUI's formula), "epochs" (sd-scripts' max_train_epochs) or "steps" (a fixed max_train_steps)."""
    formula: str
    train_repeats: int = 0
    reg_repeats: int = 0
    """Regularisation picture-repeats after sd-scripts balanced them to ``train_repeats``."""
    batches_per_epoch: int = 0
    steps_per_epoch: int = 0
    files: list[str] = field(default_factory=list)
    """The training (not regularisation) pictures sd-scripts reads."""

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("files")
        return d


def epoch_batches(subsets: list[Subset], batch: int, rules: BucketRules) -> tuple[int, int, int, list[str]]:
    """(batches per epoch, train picture-repeats, reg picture-repeats after balancing, training files)."""
    table = rules.resolutions() if rules.enable and not rules.no_upscale else []
    train: list[tuple[Path, int]] = []
    reg: list[list[Any]] = []
    seen: set[str] = set()
    for s in subsets:
        if s.num_repeats < 1 or s.image_dir in seen:
            continue
        seen.add(s.image_dir)
        for p in s.images():
            (reg.append([p, s.num_repeats]) if s.is_reg else train.append((p, s.num_repeats)))
    n_train = sum(r for _, r in train)
    reg_used = _balance(reg, n_train)
    per_bucket: dict[tuple[int, int], int] = {}
    for path, repeats in [*train, *((p, r) for p, r in reg_used)]:
        try:
            with Image.open(path) as im:
                size = im.size
        except Exception:  # sd-scripts would stop here; the comparison names the file from our scan
            continue
        b = rules.bucket(*size, table)
        per_bucket[b] = per_bucket.get(b, 0) + repeats
    batches = sum(math.ceil(n / batch) for n in per_bucket.values())
    return batches, n_train, sum(r for _, r in reg_used), [str(p) for p, _ in train]


def _balance(reg: list[list[Any]], n_train: int) -> list[list[Any]]:
    """sd-scripts repeats regularisation pictures until their count reaches the training pictures': their own
    repeats first, in order, then one more each, round and round."""
    if not reg or n_train == 0:
        return []
    used: list[list[Any]] = []
    n = 0
    for item in reg:
        used.append(item)
        n += item[1]
        if n >= n_train:
            return used
    while n < n_train:
        for item in used:
            item[1] += 1
            n += 1
            if n >= n_train:
                break
    return used


def count(subsets: list[Subset], *, batch: int, accum: int, epochs: int, rules: BucketRules,
          max_train_steps: int = 0, gui_train_dir: str | None = None) -> KohyaCount:
    """kohya's total steps: a fixed ``max_train_steps``, the GUI's formula (``gui_train_dir`` given, no fixed
    steps), or sd-scripts' ``epochs × ceil(batches ÷ accumulation)``."""
    batches, n_train, n_reg, files = epoch_batches(subsets, batch, rules)
    per_epoch = math.ceil(batches / accum) if batches else 0
    common: dict[str, Any] = {"train_repeats": n_train, "reg_repeats": n_reg, "batches_per_epoch": batches,
              "steps_per_epoch": per_epoch, "files": files}
    if max_train_steps > 0:
        return KohyaCount(max_train_steps, "steps", f"max_train_steps = {max_train_steps}", **common)
    if gui_train_dir is not None:
        repeats = gui_image_repeats(gui_train_dir)
        factor = 2 if any(s.is_reg for s in subsets) else 1
        total = math.ceil(repeats / batch / accum * epochs * factor)
        return KohyaCount(total, "gui", f"kohya_ss GUI: ceil({repeats} image-repeats ÷ batch {batch} ÷ accumulation "
                                       f"{accum} × {epochs} epochs × reg factor {factor}) = {total}", **common)
    total = epochs * per_epoch
    return KohyaCount(total, "epochs", f"sd-scripts: {epochs} epochs × ceil({batches} bucket batches ÷ accumulation "
                                      f"{accum}) = {total}", **common)


def compare(kohya: KohyaCount, report: Any, plan: Any) -> list[Msg]:
    """Where and why our plan's step count differs from kohya's, one message per cause."""
    out: list[Msg] = []
    ours = {str(Path(it.path).resolve()): it for it in report.items if not it.prior}
    theirs = {str(Path(f).resolve()) for f in kohya.files}
    problems = {p["file"]: p for p in report.problems}
    root = Path(report.root)
    for f in sorted(theirs - set(ours)):
        rel = _rel(f, root)
        p = problems.get(rel)
        out.append(msg("kohya.steps.kohya_only", rel=rel, why=_problem(p) if p else msg("kohya.steps.not_scanned")))
    for f in sorted(set(ours) - theirs):
        it = ours[f]
        where = (msg("kohya.steps.in_root") if "/" not in it.rel else
                 msg("kohya.steps.no_prefix") if it.folder.split("_")[0].isdigit() is False else
                 msg("kohya.steps.not_globbed"))
        out.append(msg("kohya.steps.ours_only", rel=it.rel, repeats=it.repeats, where=where))
    ours_reg = report.image_repeats - sum(it.repeats for it in ours.values())
    if ours_reg != kohya.reg_repeats:
        out.append(msg("kohya.steps.reg", train=kohya.train_repeats, kohya=kohya.reg_repeats, ours=ours_reg))
    if not out and kohya.batches_per_epoch and kohya.batches_per_epoch != plan.batches_per_epoch:
        out.append(msg("kohya.steps.buckets", kohya=kohya.batches_per_epoch, ours=plan.batches_per_epoch))
    if kohya.how == "gui" and kohya.total != plan.total_steps:
        out.append(msg("kohya.steps.gui", total=kohya.total, per_epoch=plan.steps_per_epoch, epochs=plan.epochs))
    return out


def _problem(p: dict[str, Any]) -> Any:
    """What our scan said of a file: its message, or the message in both languages where the scan worded it."""
    if isinstance(p["message"], Msg):
        return p["message"]
    return {"en": p["message"], "ko": p.get("message_ko", p["message"])}


def _rel(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path
