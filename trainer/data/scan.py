"""Scan a training folder: kohya ``N_name`` folders, captions, and every problem a file can have.

The scan never crashes on a file: each bad file becomes one problem (``file``, ``kind``, ``severity``,
``message``, a :class:`~trainer.message.Msg`) and the rest of the folder is still read. Only a missing folder, a path that
is a file, or a folder without a single image is a :class:`UserError`.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError
from pydantic import ValidationError

from trainer.config.invalid import input_reason
from trainer.config.schema import DatasetConfig
from trainer.data.buckets import Bucket, assign_bucket, buckets_for, upscale_factor
from trainer.data.caption_doctor import check_captions
from trainer.data.folders import PRIOR_PREFIX, Folder, check_root, discover_folders, mask_file
from trainer.data.images import bit_depth, exif_orientation, has_transparency
from trainer.data.near_copies import Seen, Thumbnail, thumbnail
from trainer.data.problems import problem as _problem
from trainer.data.problems import tag_weld
from trainer.errors import UserError
from trainer.message import msg

# Pillow's default hard limit (2 × MAX_IMAGE_PIXELS). Checked from the header ourselves too, so the refusal
# holds even where someone set Image.MAX_IMAGE_PIXELS = None. ~13k × 13k: far beyond any training picture.
BOMB_PIXELS = 178_956_970
EXTREME_ASPECT = 4.0
SOFT_UPSCALE = 2.0
TAG_WELD_SHARE = 0.9


@dataclass
class ImageItem:
    """One usable training image. ``width``/``height`` are after EXIF rotation."""

    path: str
    rel: str
    folder: str
    repeats: int
    caption: str
    width: int
    height: int
    bucket: Bucket
    caption_source: str = "file"
    """"file", or what stood in for a missing/empty/unreadable one: "folder" (kohya class words), "trigger", "none"."""
    prior: bool = False
    """A prior (regularisation) image from ``dataset.reg_path``; its ``rel`` starts with ``PRIOR_PREFIX``."""


@dataclass
class DatasetReport:
    """What the scan found. ``to_json()`` gives a plain dict (no inf/nan) for the UI, CLI and ``plan.json``."""

    root: str
    usable: bool
    images: int
    captions: int
    image_repeats: int
    folders: list[dict[str, Any]]
    problems: list[dict[str, Any]]
    items: list[ImageItem]
    buckets: list[dict[str, int]]
    size_histogram: list[dict[str, Any]]
    aspect_histogram: list[dict[str, Any]]
    tags: dict[str, int]
    trigger_share: float | None
    tag_warnings: list[dict[str, Any]]
    problem_counts: dict[str, int] = field(default_factory=dict)
    resolution: int = 512
    trigger: str = ""
    prior_images: int = 0
    """How many of ``images`` are prior images (``dataset.reg_path``)."""
    held_out: int = 0
    """Pictures taken out for the validation loss (:func:`trainer.data.holdout.split_holdout`); not in ``items``."""
    caption_findings: list[dict[str, Any]] = field(default_factory=list)
    """The caption doctor's findings about the captions as a whole (:mod:`trainer.data.caption_doctor`)."""

    @property
    def own_images(self) -> int:
        """The dataset's own pictures, prior images left out."""
        return self.images - self.prior_images

    def to_json(self, include_items: bool = True) -> dict[str, Any]:
        d = asdict(self)
        if include_items:
            for it in d["items"]:
                it["bucket"] = list(it["bucket"])
        else:
            del d["items"]
        return d


# ------------------------------------------------------------------------------------------- public API


def scan_dataset(cfg: DatasetConfig | None = None, /, *, progress: Callable[[int, int], None] | None = None,
                 **overrides: Any) -> DatasetReport:
    """Scan ``cfg.path``; keyword overrides (``path=``, ``trigger=``, ...) replace config fields. ``progress(done,
    total)`` after each picture file (every one is opened and hashed: seconds for a big folder).

    Raises :class:`UserError` for a missing path, a file instead of a folder, or a folder with no images.
    """
    cfg = _resolve_cfg(cfg, overrides)
    root = check_root(cfg.path)
    folders, unsupported = discover_folders(root, cfg)
    n_images = sum(len(f.files) for f in folders)
    if cfg.reg_path:
        reg_folders, reg_unsupported = discover_folders(check_root(cfg.reg_path, "dataset.reg_path"), cfg, PRIOR_PREFIX)
        folders += reg_folders
        unsupported += reg_unsupported
    if n_images == 0:
        unreadable = msg("error.scan.unreadable_formats", n=len(unsupported)) if unsupported else ""
        skipped = msg("error.scan.zero_folders") if any(f.repeats == 0 for f in folders) else ""
        raise UserError(msg("error.scan.no_images", root=root, unreadable=unreadable, skipped=skipped))
    buckets = buckets_for(cfg)
    problems: list[dict[str, Any]] = [
        _problem("unsupported_format", rel, suffix=Path(rel).suffix) for rel in unsupported
    ]
    items: list[ImageItem] = []
    captions: dict[str, str] = {}  # rel → the caption file's text (only real, non-empty ones)
    seen = Seen()  # each file's content hash and thumbnail: exact copies are left out, near ones named
    folder_rows = []
    done, total = 0, sum(len(f.files) for f in folders)
    for f in folders:
        problems.extend(f.problems)
        count = 0
        # prior images are captioned without the trigger on purpose
        folder_cfg = cfg.model_copy(update={"trigger": ""}) if f.prior else cfg
        for path in f.files:
            if progress:
                progress(done, total)
            done += 1
            rel = f.prefix + path.relative_to(f.root).as_posix()
            try:
                item, notes, text = _scan_image(path, rel, f, folder_cfg, buckets, seen)
            except _Excluded as ex:
                problems.append(ex.problem)
                continue
            except Exception as e:  # the scan must survive any file; the reason goes to the user
                problems.append(_problem("unreadable_image", rel, reason=_short(e)))
                continue
            problems.extend(notes)
            items.append(item)
            count += 1
            if text and not f.prior:  # tag counts and the trigger share describe the dataset itself
                captions[rel] = text
        folder_rows.append({"name": f.name, "repeats": f.repeats, "images": count})
    if progress:
        progress(total, total)
    problems += [_problem("near_copy", rel, original=o, similarity=c) for rel, o, c in seen.near_copies()]
    return _summarise(root, cfg, items, captions, problems, folder_rows)


def split_tags(caption: str) -> list[str]:
    """Comma-separated tags, trimmed, empty ones dropped."""
    return [t for t in (" ".join(p.split()) for p in caption.split(",")) if t]


def contains_trigger(caption: str, trigger: str) -> bool:
    """Whether ``trigger`` appears as a whole word (case-insensitive, as CLIP lower-cases)."""
    if not trigger:
        return True
    return re.search(rf"(?<!\w){re.escape(trigger)}(?!\w)", caption, re.IGNORECASE) is not None


def min_side_for(resolution: int) -> int:
    """Shortest side under which an image is refused: upscaling it more than ~8× gives mush."""
    return max(min(64, resolution // 2), resolution // 8)


# ---------------------------------------------------------------------------------------------- helpers


def _resolve_cfg(cfg: DatasetConfig | None, overrides: dict[str, Any]) -> DatasetConfig:
    if cfg is None and not overrides:
        raise UserError(msg("error.scan.no_folder"))
    if not overrides:
        return cfg  # type: ignore[return-value]
    base = cfg.model_dump() if cfg is not None else {}
    try:
        return DatasetConfig.model_validate({**base, **overrides})
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise UserError(msg("error.config.bad_value", key=f"dataset.{key}", value=repr(err.get("input")),
                            reason=input_reason(err))) from None


def _short(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _file_hash(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class _Excluded(Exception):
    """Raised inside a file's checks: the file is not trained on, for this one reason."""

    def __init__(self, kind: str, rel: str, **fmt: Any):
        super().__init__(kind)
        self.problem = _problem(kind, rel, **fmt)


def _inspect_pixels(path: Path, rel: str, resolution: int) -> tuple[int, int, Thumbnail, list[dict[str, Any]]]:
    """Header checks first, then one full decode. Returns the upright size, the thumbnail near copies are found by
    (:mod:`trainer.data.near_copies`) and notes."""
    if path.stat().st_size == 0:
        raise _Excluded("zero_byte", rel)
    limit = f"{BOMB_PIXELS:,}"
    try:
        with warnings.catch_warnings():
            # Between 1× and 2× MAX_IMAGE_PIXELS Pillow only warns; the size check below decides.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(path)
    except Image.DecompressionBombError:
        raise _Excluded("decompression_bomb", rel, pixels=f"more than {limit}", limit=limit) from None
    except UnidentifiedImageError:
        raise _Excluded("not_an_image", rel, suffix=path.suffix) from None
    with im:
        w, h = im.size
        if w * h > BOMB_PIXELS:  # from the header alone, before a single pixel is decoded
            raise _Excluded("decompression_bomb", rel, pixels=f"{w}×{h}", limit=limit)
        orientation = exif_orientation(im)
        if orientation in (5, 6, 7, 8):
            w, h = h, w
        min_side = min_side_for(resolution)
        if min(w, h) < min_side:
            raise _Excluded("too_small", rel, w=w, h=h, res=resolution, min_side=min_side)
        frames = im.n_frames if getattr(im, "is_animated", False) else 1  # type: ignore[attr-defined]  # animated formats add it
        im.seek(0)
        bits = bit_depth(im)
        if im.format == "JPEG":
            # Decode at 1/8 scale: libjpeg still reads every byte (truncation is caught), 10-50× faster.
            im.draft(im.mode, (1, 1))
        try:
            im.load()
        except Exception as e:
            raise _Excluded("unreadable_image", rel, reason=_short(e)) from None
        notes = [_problem("animated", rel, frames=frames)] if frames > 1 else []
        if im.mode == "CMYK":
            notes.append(_problem("cmyk", rel))
        if bits > 8:
            notes.append(_problem("high_bit_depth", rel, bits=bits))
        if has_transparency(im):
            notes.append(_problem("alpha_channel", rel))
        thumb = thumbnail(im)
    if orientation != 1:
        notes.append(_problem("exif_rotated", rel, orientation=orientation, w=w, h=h))
    return w, h, thumb, notes


def _scan_image(
    path: Path, rel: str, folder: Folder, cfg: DatasetConfig, buckets: list[Bucket], seen: Seen
) -> tuple[ImageItem, list[dict[str, Any]], str | None]:
    """Check one file: the item, its notes, and its caption file's text. Raises _Excluded."""
    w, h, thumb, notes = _inspect_pixels(path, rel, cfg.resolution)
    if (original := seen.exact(_file_hash(path), rel)) is not None:
        raise _Excluded("duplicate", rel, original=original)
    seen.add(rel, thumb)
    bucket = assign_bucket(w, h, buckets)
    if max(w, h) / min(w, h) > EXTREME_ASPECT:
        notes.append(_problem("extreme_aspect", rel, ratio=max(w, h) / min(w, h), bw=bucket[0], bh=bucket[1]))
    scale = upscale_factor(w, h, bucket)
    if scale > SOFT_UPSCALE:
        notes.append(_problem("low_resolution", rel, w=w, h=h, scale=scale, bw=bucket[0], bh=bucket[1]))
    text, status = read_caption(path, cfg.caption_ext)
    caption, source = text or "", "file"
    if status != "ok":
        caption, source = _fallback_caption(folder.class_words, cfg.trigger)
        shown = msg("problem.fallback_caption", caption=caption) if caption else msg("problem.fallback_empty")
        cap_name = path.with_suffix(cfg.caption_ext).name
        notes.append(_problem(status, rel, fallback=shown, caption=cap_name))
    elif cfg.trigger and not contains_trigger(caption, cfg.trigger):
        notes.append(_problem("no_trigger", rel, trigger=cfg.trigger))
    if cfg.masked_loss and not folder.prior and mask_file(path) is None and "alpha_channel" not in {n["kind"] for n in notes}:
        notes.append(_problem("no_mask", rel))
    item = ImageItem(str(path), rel, folder.name, folder.repeats, caption, w, h, bucket, source, folder.prior)
    return item, notes, text


def read_caption(image: Path, ext: str) -> tuple[str | None, str]:
    """(text, status) with status one of ok / missing_caption / empty_caption / caption_not_utf8."""
    cap = image.with_suffix(ext)
    if not cap.is_file():
        return None, "missing_caption"
    try:
        raw = cap.read_bytes().decode("utf-8-sig")  # -sig: Windows Notepad's BOM is not part of the caption
    except UnicodeDecodeError:
        return None, "caption_not_utf8"
    # Lines become comma-separated parts: kohya keeps only the first line, which silently drops the rest.
    lines = [" ".join(line.split()).strip(", ") for line in raw.splitlines()]
    text = ", ".join(line for line in lines if line)
    return (text, "ok") if text else (None, "empty_caption")


def _fallback_caption(class_words: str, trigger: str) -> tuple[str, str]:
    # kohya's DreamBooth-style folders: "10_zxc girl" trains uncaptioned pictures as "zxc girl".
    if class_words:
        return class_words, "folder"
    if trigger:
        return trigger, "trigger"
    return "", "none"


# (lo, hi, label), hi None = open-ended. Shortest side in pixels; aspect as width / height.
SIZE_BINS = [(0, 256, "<256"), (256, 512, "256–511"), (512, 768, "512–767"), (768, 1024, "768–1023"),
             (1024, 1536, "1024–1535"), (1536, 2048, "1536–2047"), (2048, None, "≥2048")]  # fmt: skip
ASPECT_BINS = [(0.0, 0.25, "<1:4"), (0.25, 0.5, "1:4–1:2"), (0.5, 0.75, "1:2–3:4"), (0.75, 0.95, "3:4–1:1"),
               (0.95, 1.05, "1:1"), (1.05, 4 / 3, "1:1–4:3"), (4 / 3, 2.0, "4:3–2:1"), (2.0, 4.0, "2:1–4:1"),
               (4.0, None, ">4:1")]  # fmt: skip


def _histogram(values: Sequence[float], bins: Sequence[tuple[float, float | None, str]]) -> list[dict[str, Any]]:
    return [
        {"label": label, "lo": lo, "hi": hi, "count": sum(lo <= v and (hi is None or v < hi) for v in values)}
        for lo, hi, label in bins
    ]


def _tag_stats(
    captions: list[str], trigger: str
) -> tuple[dict[str, int], float | None, list[dict[str, Any]]]:
    counts: Counter[str] = Counter()
    for c in captions:
        counts.update(set(split_tags(c)))  # a tag counts once per caption: "in how many captions"
    tags = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    share = None
    if trigger and captions:
        share = sum(contains_trigger(c, trigger) for c in captions) / len(captions)
    warns = []
    if len(captions) >= 3:  # with one or two captions every tag is "in all of them"; that says nothing
        for tag, n in tags.items():
            if n / len(captions) < TAG_WELD_SHARE:
                break
            if trigger and contains_trigger(tag, trigger):
                continue
            pct = round(100 * n / len(captions))
            warns.append({"tag": tag, "count": n, "share": n / len(captions), "message": tag_weld(tag, pct)})
    return tags, share, warns


def bucket_table(items: list[ImageItem]) -> list[dict[str, int]]:
    """Pictures and picture × repeats per bucket, narrowest aspect first: the report's ``buckets``."""
    by_bucket: dict[Bucket, list[int]] = {}
    for it in items:
        row = by_bucket.setdefault(it.bucket, [0, 0])
        row[0] += 1
        row[1] += it.repeats
    return [{"width": b[0], "height": b[1], "images": n, "image_repeats": r}
            for b, (n, r) in sorted(by_bucket.items(), key=lambda kv: (kv[0][0] / kv[0][1], kv[0][0]))]


def _summarise(
    root: Path,
    cfg: DatasetConfig,
    items: list[ImageItem],
    captions: dict[str, str],
    problems: list[dict[str, Any]],
    folders: list[dict[str, Any]],
) -> DatasetReport:
    buckets = bucket_table(items)
    tags, share, tag_warnings = _tag_stats(list(captions.values()), cfg.trigger)
    return DatasetReport(
        root=str(root),
        usable=bool(items),
        images=len(items),
        captions=len(captions),
        image_repeats=sum(it.repeats for it in items),
        folders=folders,
        problems=problems,
        items=items,
        buckets=buckets,
        size_histogram=_histogram([min(it.width, it.height) for it in items], SIZE_BINS),
        aspect_histogram=_histogram([it.width / it.height for it in items], ASPECT_BINS),
        tags=tags,
        trigger_share=share,
        tag_warnings=tag_warnings,
        problem_counts=dict(Counter(p["kind"] for p in problems)),
        resolution=cfg.resolution,
        trigger=cfg.trigger,
        prior_images=sum(it.prior for it in items),
        caption_findings=check_captions(captions, cfg.trigger, cfg.keep_tokens,
                                        shuffled=cfg.shuffle_tags or cfg.tag_dropout > 0),
    )
