"""Import a kohya_ss GUI config (JSON) or an sd-scripts config (TOML, with its dataset_config TOML) as ours,
with a report of what became what. The key-by-key table is :mod:`trainer.kohya.mapping`; the step counts are
:mod:`trainer.kohya.steps`; writing sd-scripts files back is :mod:`trainer.kohya.exporter`."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from trainer.config.schema import Config, from_dict
from trainer.errors import UserError
from trainer.kohya.flow import family_of, own_table
from trainer.kohya.mapping import BY_GUI, BY_SD, Changed, Row
from trainer.kohya.report import Report
from trainer.message import msg

# Signs of a model, or a kind of network, we do not train: (key, value test, what it is). Flux.1 LoRA configs
# (trainer.kohya.flux) and SD3.5's (trainer.kohya.sd3) are imported.
FOREIGN_FAMILIES = (
    ("hunyuan_image_checkbox", bool, "HunyuanImage"), ("anima_checkbox", bool, "Anima"),
    ("lumina_checkbox", bool, "Lumina"), ("v2", bool, "SD 2.x"),
    ("LoRA_type", lambda v: str(v) == "Flux1 OFT", "Flux.1 OFT"),
    ("network_module", lambda v: str(v).startswith("networks.oft_flux"), "Flux.1 OFT"),
    ("network_module", lambda v: str(v).startswith(("networks.lora_lumina", "networks.lora_hunyuan", "networks.lora_anima")),
     "a DiT model"),
    ("controlnet_model_name_or_path", bool, "Flux.1 ControlNet"),
)  # fmt: skip
GUI_DEFAULTS = ("network_train_unet_only",)
KOHYA_MARKERS = ("pretrained_model_name_or_path", "train_data_dir", "network_dim", "learning_rate", "optimizer",
                 "optimizer_type", "max_resolution", "output_name", "dataset_config", "LoRA_type")



def read_source(path: str | Path) -> tuple[str, dict[str, Any]]:
    """("gui" | "sd", the file's settings). One UserError naming the file for anything else."""
    p = Path(path)
    if not p.is_file():
        raise UserError(msg("error.kohya.not_found", path=p))
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(msg("error.kohya.not_text", path=p)) from None
    if p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise UserError(msg("error.kohya.bad_json", path=p, line=e.lineno, reason=e.msg)) from None
        kind = "gui"
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise UserError(msg("error.kohya.bad_toml", path=p, reason=str(e))) from None
        kind = "sd"
        data = _flatten_sections(data)
    _check_kind(p, data)
    return kind, data


def _flatten_sections(data: dict[str, Any]) -> dict[str, Any]:
    # sd-scripts reads [section] tables of its --config_file as if their keys were at the top
    if "datasets" in data:
        return data
    out: dict[str, Any] = {}
    for k, v in data.items():
        out.update(v if isinstance(v, dict) else {k: v})
    return out


def _check_kind(p: Path, data: Any) -> None:
    if not isinstance(data, dict):
        raise UserError(msg("error.kohya.not_a_table", path=p, kind=type(data).__name__))
    if ("nodes" in data and "links" in data) or any(isinstance(v, dict) and "class_type" in v for v in data.values()):
        raise UserError(msg("error.kohya.comfyui", path=p))
    if "datasets" in data or "general" in data:
        raise UserError(msg("error.kohya.dataset_as_file", path=p))
    for key, test, family in FOREIGN_FAMILIES:
        if key in data and test(data[key]):
            raise UserError(msg("error.kohya.foreign", path=p, family=family, key=key, value=data[key]))
    if family_of(data) == "flux" and str(data.get("model_type") or "flux").strip().lower() != "flux":
        # flux_train_network.py's Chroma: another model (no CLIP-L, no guidance)
        raise UserError(msg("error.kohya.foreign", path=p, family="Chroma", key="model_type", value=data["model_type"]))
    if not any(k in data for k in KOHYA_MARKERS):
        raise UserError(msg("error.kohya.not_lora", path=p, keys=", ".join(KOHYA_MARKERS[:4])))


def read_dataset_config(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UserError(msg("error.kohya.dataset_not_found", path=p))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(msg("error.kohya.bad_toml", path=p, reason=str(e))) from None
    datasets = data.get("datasets")
    if not isinstance(datasets, list) or not datasets or not all(isinstance(d, dict) for d in datasets):
        raise UserError(msg("error.kohya.no_datasets", path=p))
    for d in datasets:
        subsets = d.get("subsets")
        if not isinstance(subsets, list) or not subsets or not all(isinstance(s, dict) and s.get("image_dir")
                                                                      for s in subsets):
            raise UserError(msg("error.kohya.no_subsets", path=p))
    return data


class Importer:
    """One import: collects our values (dotted keys) and the report's entries as it reads each key."""

    def __init__(self, kind: str, src: dict[str, Any], origin: str, bf16: bool | None):
        self.kind, self.src, self.origin, self.bf16 = kind, dict(src), origin, bf16
        self.values: dict[str, Any] = {}
        self.report = Report(source=origin, kind=kind)
        self.done: set[str] = set()
        self.dataset_config = ""
        self.follow_paths = True
        """The dataset config read, if any (then sd-scripts counts the steps, not the GUI)."""

    def row_for(self, key: str) -> Row | None:
        """The key's row: the shared table's, or in an SD3.5 or Flux.1 config that family's own."""
        row = (BY_GUI if self.kind == "gui" else BY_SD).get(key)
        return own_table(self.src, self.kind).get(key) if row is None else row

    def put(self, key: str, value: Any, row: Row, raw: Any, src_key: str | None = None) -> None:
        """Convert ``raw`` with ``row.to_ours`` (or take ``value``) and record it under ``row.ours``."""
        src_key = src_key or key
        try:
            out = row.to_ours(raw) if value is None else value
        except (ValueError, TypeError) as e:
            raise UserError(msg("error.kohya.bad_value", origin=self.origin, key=src_key, value=raw, reason=str(e))) from None
        if isinstance(out, Changed):
            self.values[row.ours] = out.value
            self.report.changed(src_key, raw, row.ours, out.value, out.why)
        else:
            self.values[row.ours] = out
            self.report.mapped(src_key, raw, row.ours, out)
        self.done.add(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self.src.get(key, default)


def import_kohya(path: str | Path, dataset_config: str | Path | None = None, *, bf16: bool | None = None,
                 compare_steps: bool = True, follow_paths: bool = True) -> tuple[Config, Report]:
    """Read a kohya config (and its dataset config); return our config and the mapping report.

    ``bf16``: whether the device trains in bf16 (None: ask torch). ``follow_paths`` False: no file or folder
    the config names is read (the dataset config, the prompt file, the pictures), as while the app is shared.
    Validation errors of the result are a UserError naming the kohya key they came from."""
    kind, src = read_source(path)
    imp = Importer(kind, src, str(path), bf16)
    imp.follow_paths = follow_paths
    compare_steps = compare_steps and follow_paths
    ds_path = dataset_config or (src.get("dataset_config") or None)
    if ds_path and not dataset_config and (not follow_paths or not Path(ds_path).is_file()):
        why = msg("kohya.dataset_config.missing") if follow_paths else msg("kohya.dataset_config.not_read")
        imp.report.unsupported("dataset_config", ds_path, why)
        ds_path = None
    _sd_defaults(imp)
    from trainer.kohya import flux, sd3, special, subsets

    flux.importing(imp)
    sd3.importing(imp)

    found = subsets.dataset(imp, read_dataset_config(ds_path) if ds_path else None, str(ds_path or ""))
    special.network(imp)
    special.training(imp)
    for key, raw in imp.src.items():
        if key in imp.done:
            continue
        row = imp.row_for(key)
        if row is None:
            imp.report.unknown(key, raw)
        elif row.supported and not row.special:
            imp.put(key, None, row, raw)
        elif not row.supported:
            imp.report.unsupported(key, raw, row.note)
    special.text_cache(imp)  # after the rest: whether the captions can be encoded once depends on it
    kohya = special.steps(imp, found, compare=compare_steps)
    cfg = build_config(imp)
    if compare_steps and kohya is not None:
        special.compare_plan(imp, cfg, kohya)
    return cfg, imp.report


def _sd_defaults(imp: Importer) -> None:
    """sd-scripts' own defaults for what its TOML leaves out (a caption_extension of .caption, alpha 1...); a
    kohya_ss JSON has every key the GUI knew when it was saved, except newer ones such as network_train_unet_only,
    whose GUI default is sd-scripts' too."""
    if imp.kind == "gui":
        for key in GUI_DEFAULTS:
            if key not in imp.src:
                imp.src[key] = BY_GUI[key].sd_default
                imp.report.defaulted.append(key)
        return
    for row in BY_SD.values():
        if row.sd_default is not None and row.sd not in imp.src and row.supported:
            imp.src[row.sd] = row.sd_default
            imp.report.defaulted.append(row.sd)


def build_config(imp: Importer) -> Config:
    data: dict[str, Any] = {}
    for dotted, value in imp.values.items():
        section, leaf = dotted.split(".")
        data.setdefault(section, {})[leaf] = value
    try:
        return from_dict(data, origin=imp.origin)
    except UserError as e:
        # name the kohya key behind the first of our keys the message mentions
        for entry in imp.report.entries:
            if entry["ours"] and re.search(rf"'{re.escape(entry['ours'])}'", str(e)):
                raise UserError(msg("error.kohya.bad_value_ours", origin=imp.origin, key=entry["key"], value=entry["value"],
                                    ours=entry["ours"], reason=str(e).split(": ", 2)[-1])) from None
        raise
