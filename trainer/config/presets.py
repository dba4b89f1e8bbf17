"""Presets: sparse TOML overrides of the config defaults, shipped in ``presets/``.

A preset file holds a ``[preset]`` table (version, names and one-line descriptions in Korean and English)
and any config sections it changes. Users' own presets live in the same format in the workspace.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.message import msg

PRESET_DIR = Path(__file__).resolve().parents[2] / "presets"
PRESET_FORMAT_VERSION = 1
SUBJECTS = ("character", "concept", "style")  # what a preset trains ([preset] subject; a character when unsaid)


@dataclass(frozen=True)
class Preset:
    id: str
    version: int
    name: dict[str, str]
    description: dict[str, str]
    overrides: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    subject: str = "character"

    def label(self, lang: str = "en") -> str:
        return self.name.get(lang) or self.name["en"]

    def blurb(self, lang: str = "en") -> str:
        return self.description.get(lang) or self.description["en"]

    @property
    def family(self) -> str:
        """The model family it trains (``model.family``; a preset that names none, the default's)."""
        from trainer.models.family import AUTO, DEFAULT

        named = (self.overrides.get("model") or {}).get("family", AUTO)
        return DEFAULT if named == AUTO else str(named)


def _parse(path: Path) -> Preset:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(msg("error.preset.bad_toml", path=path, error=str(e))) from None
    meta = data.pop("preset", None)
    if not isinstance(meta, dict):
        raise UserError(msg("error.preset.no_table", path=path))
    missing = [k for k in ("version", "name_en", "name_ko", "description_en", "description_ko") if k not in meta]
    if missing:
        raise UserError(msg("error.preset.missing", path=path, keys=", ".join(missing)))
    if meta["version"] != PRESET_FORMAT_VERSION:
        raise UserError(msg("error.preset.version", path=path, version=meta["version"], expected=PRESET_FORMAT_VERSION))
    subject = meta.get("subject", "character")
    if subject not in SUBJECTS:
        raise UserError(msg("error.preset.subject", path=path, subject=subject, known=", ".join(SUBJECTS)))
    return Preset(
        subject=subject,
        id=path.stem,
        version=meta["version"],
        name={"en": meta["name_en"], "ko": meta["name_ko"]},
        description={"en": meta["description_en"], "ko": meta["description_ko"]},
        overrides=data,
        path=path,
    )


@functools.cache
def _every_setting() -> frozenset[str]:
    """Every setting's dotted key (the sections'; the schema's, so read once)."""
    from trainer.config.schema import Config, flatten

    return frozenset(flatten({k: v for k, v in Config().to_dict().items() if isinstance(v, dict)}))


def sets_every_key(data: dict[str, Any]) -> bool:
    """Whether a config's ``data`` sets every setting there is (as a run's ``config.toml`` does): a preset under it
    would change nothing, so its name need not be found (a preset of the user's own is not on the search path)."""
    from trainer.config.schema import flatten

    return _every_setting() <= set(flatten({k: v for k, v in data.items() if isinstance(v, dict)}))


def preset_dirs(extra: list[Path] | None = None) -> list[Path]:
    return [PRESET_DIR, *(extra or [])]


def list_presets(extra_dirs: list[Path] | None = None) -> list[Preset]:
    found: dict[str, Preset] = {}
    for d in preset_dirs(extra_dirs):
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                found[p.stem] = _parse(p)
    return list(found.values())


def presets_by_family(presets: list[Preset]) -> list[tuple[str, list[Preset]]]:
    """(a family's label, its presets) in the families' order, the demo's first in its family; a preset of a family
    no longer registered comes last under its own name."""
    from trainer.models.family import families

    labels = {f.name: f.label for f in families()}
    groups: dict[str, list[Preset]] = {}
    for p in sorted(presets, key=lambda p: (p.overrides.get("model") or {}).get("base") != "demo"):
        groups.setdefault(p.family, []).append(p)
    order = [*labels, *sorted(set(groups) - set(labels))]
    return [(labels.get(name, name), groups[name]) for name in order if name in groups]


def load_preset(name_or_path: str, extra_dirs: list[Path] | None = None) -> Preset:
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        return _parse(p)
    for d in reversed(preset_dirs(extra_dirs)):
        candidate = d / f"{name_or_path}.toml"
        if candidate.is_file():
            return _parse(candidate)
    known = ", ".join(pr.id for pr in list_presets(extra_dirs))
    raise UserError(msg("error.preset.unknown", name=name_or_path, known=known))


def preset_config(name_or_path: str, extra_dirs: list[Path] | None = None):
    """The full config a preset gives on top of the defaults."""
    from trainer.config.schema import from_dict

    preset = load_preset(name_or_path, extra_dirs)
    cfg = from_dict(preset.overrides, origin=str(preset.path))
    cfg.preset = preset.id
    return cfg
