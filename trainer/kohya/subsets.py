"""The dataset of a kohya config: the folders train_data_dir / reg_data_dir hold, or a dataset config's
subsets, as our dataset.path / reg_path / repeats and trigger, with the dataset-level settings. Reads from and
writes to one :class:`~trainer.kohya.importer.Importer`, like :mod:`trainer.kohya.special`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.kohya.mapping import BY_SD, as_bool, as_int
from trainer.kohya.steps import Subset, subsets_from_folders
from trainer.message import msg

if TYPE_CHECKING:
    from trainer.kohya.importer import Importer

DATASET_ALIASES = {"batch_size": "train_batch_size"}  # dataset-config name → argument name
SUBSET_FIELDS = {"image_dir", "num_repeats", "is_reg", "class_tokens"}


def dataset(imp: Importer, cfg: dict[str, Any] | None, origin: str) -> list[Subset]:
    """Our dataset.path / reg_path / repeats and the dataset-level settings; the subsets sd-scripts reads."""
    if cfg is None:
        if not imp.follow_paths:
            return []
        subsets = subsets_from_folders(str(imp.get("train_data_dir") or ""), str(imp.get("reg_data_dir") or ""))
        _trigger(imp, [s for s in subsets if not s.is_reg])
        return subsets
    for key in ("train_data_dir", "reg_data_dir"):
        if key in imp.src:
            imp.report.unsupported(key, imp.src[key], msg("kohya.dataset.folders_ignored"))
            imp.done.add(key)
    imp.dataset_config = origin
    general = cfg.get("general", {})
    datasets = cfg["datasets"]
    for n, extra in enumerate(datasets[1:], start=1):
        imp.report.unsupported(f"{origin} [[datasets]] #{n + 1}", [s["image_dir"] for s in extra["subsets"]],
                               msg("kohya.dataset.one_dataset"))
    ds = datasets[0]
    subs = [Subset(str(s["image_dir"]), as_int(_chain("num_repeats", s, ds, general, {}, 1)),
                   as_bool(s.get("is_reg", False)), str(_chain("class_tokens", s, ds, general, {}, "") or ""))
            for s in ds["subsets"]]
    for key, row in BY_SD.items():  # dataset- and subset-level settings: subset > dataset > general > arguments
        if row.where == "args" or (not row.supported and not _anywhere(key, ds, general)):
            continue
        name = next((a for a, b in DATASET_ALIASES.items() if b == key), key)
        values = [_chain(name, s, ds, general, imp.src, None) for s in ds["subsets"] if not s.get("is_reg")]
        values = [v for v in values if v is not None] or [_chain(name, {}, ds, general, imp.src, None)]
        if values[0] is None:
            continue
        if not row.supported:
            imp.report.unsupported(name, values[0], row.note)
        else:
            imp.put(key, None, row, values[0], src_key=f"{name} (dataset config)")
            if len({repr(v) for v in values}) > 1:
                imp.report.unsupported(name, values, msg("kohya.dataset.subsets_differ"))
        imp.done.add(key)
        imp.done.add(name)
    for kind_reg, ours in ((False, "dataset.path"), (True, "dataset.reg_path")):
        group = [s for s in subs if s.is_reg == kind_reg]
        if group:
            _folders(imp, group, ours, origin)
    _trigger(imp, [s for s in subs if not s.is_reg])
    return subs


def _chain(key: str, subset: dict, ds: dict, general: dict, args: dict, default: Any) -> Any:
    for level in (subset, ds, general, args):
        if key in level:
            return level[key]
    return default


def _anywhere(key: str, ds: dict, general: dict) -> bool:
    return key in general or key in ds or any(key in s for s in ds["subsets"])


def _folders(imp: Importer, group: list[Subset], ours: str, origin: str) -> None:
    """Subsets → one folder of ``N_name`` folders (ours reads repeats and class words from the names)."""
    dirs = [Path(s.image_dir) for s in group]
    direct = len(group) == 1 and (not imp.follow_paths or not dirs[0].is_dir()
                                  or any(p.is_file() for p in dirs[0].iterdir()))
    if direct and not re.match(r"^\d+_", dirs[0].name):
        imp.values[ours] = str(dirs[0])
        imp.report.mapped(f"image_dir ({origin})", str(dirs[0]), ours, str(dirs[0]))
        if ours == "dataset.path":
            imp.values["dataset.repeats"] = group[0].num_repeats
            imp.report.mapped("num_repeats (dataset config)", group[0].num_repeats, "dataset.repeats", group[0].num_repeats)
        return
    parent = dirs[0].parent
    imp.values[ours] = str(parent)
    imp.report.changed(f"image_dir ({origin})", [str(d) for d in dirs], ours, str(parent), msg("kohya.dataset.parent"))
    for s, d in zip(group, dirs, strict=True):
        if d.parent != parent:
            imp.report.unsupported(f"image_dir {d}", str(d), msg("kohya.dataset.outside", parent=parent))
            continue
        head, _, words = d.name.partition("_")
        if not head.isdigit():
            imp.report.changed(f"num_repeats of {d.name}", s.num_repeats, "dataset.repeats", imp.values.get("dataset.repeats", 1),
                               msg("kohya.dataset.name_repeats", repeats=s.num_repeats, name=d.name))
        elif int(head) != s.num_repeats:
            imp.report.changed(f"num_repeats of {d.name}", s.num_repeats, ours, int(head),
                               msg("kohya.dataset.other_repeats", head=int(head), repeats=s.num_repeats, words=words))
        if s.class_tokens and s.class_tokens != words:
            imp.report.unsupported(f"class_tokens of {d.name}", s.class_tokens,
                                   msg("kohya.dataset.class_tokens", words=words))


def _trigger(imp: Importer, train: list[Subset]) -> None:
    words = next((s.class_tokens.split()[0] for s in train if s.class_tokens.split()), "")
    if words:
        imp.values["dataset.trigger"] = words
        imp.report.changed("class tokens", train[0].class_tokens, "dataset.trigger", words, msg("kohya.dataset.trigger"))
