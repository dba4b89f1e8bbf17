"""A small TOML writer for the shapes configs and presets have (the standard library reads TOML but does not
write it): scalars and lists at the top, then tables one level deep, and their sub-tables."""

from __future__ import annotations

from typing import Any


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r if any(c in r for c in ".eEn") else r + ".0"
    if isinstance(v, str):
        return _toml_string(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if v is None:
        raise TypeError("TOML has no null")
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _toml_string(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def dumps_toml(data: dict[str, Any]) -> str:
    """A small TOML writer for our shapes: scalars and lists at the top, then one level of tables."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif v is not None:
            lines.append(f"{k} = {_toml_value(v)}")
    for name, table in tables:
        lines.append("")
        lines.append(f"[{name}]")
        sub: list[tuple[str, dict[str, Any]]] = []
        for k, v in table.items():
            if isinstance(v, dict):
                sub.append((k, v))
            elif v is not None:
                lines.append(f"{k} = {_toml_value(v)}")
        for sk, sv in sub:
            lines.append("")
            lines.append(f"[{name}.{sk}]")
            lines.extend(f"{k} = {_toml_value(v)}" for k, v in sv.items() if v is not None)
    return "\n".join(lines) + "\n"
