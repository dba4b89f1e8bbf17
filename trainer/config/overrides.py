"""Reading a config's TOML and ``--set section.key=value`` overrides, as plain dicts before validation."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

from trainer.errors import UserError
from trainer.message import msg


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UserError(msg("error.config.not_found", path=p))
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(msg("error.config.bad_toml", path=p, error=str(e))) from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise UserError(msg("error.config.too_deep", path=p)) from None


def parse_override(item: str) -> tuple[str, Any]:
    """``section.key=value`` → (path, value). The value is TOML-ish: numbers, true/false, lists, strings."""
    if "=" not in item:
        raise UserError(msg("error.set.no_equals", item=item))
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise UserError(msg("error.set.empty_key", item=item))
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw  # a bare string such as a path
        except (RecursionError, MemoryError):
            raise UserError(msg("error.set.too_deep", key=key)) from None
    except RecursionError:
        raise UserError(msg("error.set.too_deep", key=key)) from None
    return key, value


def apply_overrides(data: dict[str, Any], overrides: list[str] | None) -> dict[str, Any]:
    out = deep_merge({}, data)
    for item in overrides or []:
        key, value = parse_override(item)
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise UserError(msg("error.set.not_a_section", item=item, part=part))
            node = child
        node[parts[-1]] = value
    return out


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out
