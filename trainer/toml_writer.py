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


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list | tuple) and bool(v) and all(isinstance(x, dict) for x in v)


def _table_array(name: str, rows: list[dict[str, Any]]) -> list[str]:
    """``[[name]]`` blocks; a list of tables inside one becomes ``[[name.key]]`` (sd-scripts' dataset config
    has ``[[datasets]]`` holding ``[[datasets.subsets]]``)."""
    lines: list[str] = []
    for row in rows:
        lines += ["", f"[[{name}]]"]
        nested = [(k, v) for k, v in row.items() if _is_table_array(v)]
        lines += [f"{k} = {_toml_value(v)}" for k, v in row.items() if v is not None and not _is_table_array(v)]
        for k, v in nested:
            lines += _table_array(f"{name}.{k}", v)
    return lines


def dumps_toml(data: dict[str, Any]) -> str:
    """A small TOML writer for our shapes: scalars and lists at the top, then one level of tables, then arrays
    of tables (``[[name]]``)."""
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    arrays: list[tuple[str, list[dict[str, Any]]]] = []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif _is_table_array(v):
            arrays.append((k, v))
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
    for name, rows in arrays:
        lines += _table_array(name, rows)
    return "\n".join(lines) + "\n"
