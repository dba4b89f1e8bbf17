"""Reading a config's TOML and ``--set section.key=value`` overrides, as plain dicts before validation."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

from trainer.errors import UserError


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
        raise UserError(f"config file not found: {p} (give the path of a .toml file)")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{p} is not valid TOML: {e}") from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise UserError(f"{p}: arrays or tables nested too deeply to read; a config is a few flat tables") from None


def parse_override(item: str) -> tuple[str, Any]:
    """``section.key=value`` → (path, value). The value is TOML-ish: numbers, true/false, lists, strings."""
    if "=" not in item:
        raise UserError(f"--set {item!r}: write it as section.key=value, e.g. --set optim.lr=5e-5")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise UserError(f"--set {item!r}: the key is empty; write section.key=value")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw  # a bare string such as a path
        except (RecursionError, MemoryError):
            raise UserError(f"--set {key}: the value is nested too deeply to read") from None
    except RecursionError:
        raise UserError(f"--set {key}: the value is nested too deeply to read") from None
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
                raise UserError(f"--set {item!r}: '{part}' is a value, not a section")
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
