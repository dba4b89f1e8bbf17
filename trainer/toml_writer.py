"""Writing TOML (the standard library reads it but does not write it) through tomlkit, which gradio already
installs. tomlkit writes our shapes the way a person would: inline lists, ``[table]`` and ``[table.sub]``, and
sd-scripts' ``[[datasets]]`` with ``[[datasets.subsets]]``."""

from __future__ import annotations

from typing import Any

import tomlkit


def _without_none(value: Any) -> Any:
    """TOML has no null: a key whose value is None is left out, at any depth."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value]
    return value


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list | tuple) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps_toml(data: dict[str, Any]) -> str:
    """``data`` as TOML text: top-level values first, then tables, then arrays of tables (``[[name]]``), so the
    file reads in the same order whatever order the dict was built in. Keys whose value is None are left out."""
    data = _without_none(data)
    rank = {k: 2 if _is_table_array(v) else 1 if isinstance(v, dict) else 0 for k, v in data.items()}
    return tomlkit.dumps({k: data[k] for k in sorted(data, key=rank.__getitem__)})
