"""The shape of the code: trainer/'s sub-packages import each other without a cycle, the trainer library imports no
UI, the layer contracts of pyproject.toml (import-linter) hold and catch a forbidden import, and no source file grows
past what a reader takes in at once."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TRAINER = REPO / "trainer"
MAX_LINES = 400
UI_MODULES = ("gradio", "plotly", "ui", "fastapi", "starlette", "uvicorn")
LAYERED = ("codes", "words", "trainer", "ui")  # pyproject.toml [tool.importlinter] root_packages


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at any depth (a function-level import is still a dependency)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def _unit(path: Path) -> str:
    """A trainer file's unit: its sub-package, or the top-level module itself."""
    rel = path.relative_to(TRAINER)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _sources(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*.py") if "__pycache__" not in p.parts]


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for p in _sources(TRAINER):
        src = _unit(p)
        for mod in _imports(p):
            parts = mod.split(".")
            if parts[0] == "trainer" and len(parts) > 1 and parts[1] != src:
                graph[src].add(parts[1])
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_the_trainers_sub_packages():
    graph = _package_graph()
    assert not _cycles(graph), {
        " ↔ ".join(c): {a: sorted(graph[a] & set(c)) for a in c} for c in _cycles(graph)}


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_trainer_library_imports_no_ui():
    bad = {p.relative_to(REPO).as_posix(): m for p in _sources(TRAINER) for m in _imports(p)
           if m.split(".")[0] in UI_MODULES}
    assert not bad, f"trainer/ imports UI code: {bad}"


def test_the_word_layer_imports_no_ui():
    bad = {p.relative_to(REPO).as_posix(): m for p in _sources(REPO / "words") for m in _imports(p)
           if m.split(".")[0] in UI_MODULES}
    assert not bad, bad


def test_no_source_file_is_longer_than_a_reader_takes_in():
    long = {p.relative_to(REPO).as_posix(): n for p in _sources(TRAINER, REPO / "ui", REPO / "words")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines; split them along a seam: {long}"


def test_the_doctor_judges_without_knowing_the_demo():
    """The demo's picture measures register themselves as one more judge; nothing in doctor/ names demo/."""
    named = {p.relative_to(REPO).as_posix(): [m for m in _imports(p) if m.startswith("trainer.demo")]
             for p in _sources(TRAINER / "doctor")}
    assert not {k: v for k, v in named.items() if v}


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` over the packages under ``root`` (its pyproject.toml), in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-cache"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_layer_contracts_hold_and_a_forbidden_import_breaks_them(tmp_path):
    """A copy of the sources keeps every contract; one ``import trainer`` in words/ (a leaf) breaks one."""
    pytest.importorskip("importlinter")

    def not_source(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or not (n.endswith(".py") or Path(folder, n).is_dir())]

    for package in LAYERED:
        shutil.copytree(REPO / package, tmp_path / package, ignore=not_source)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    kept = _lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    leaf = tmp_path / "words" / "samples.py"
    leaf.write_text(leaf.read_text(encoding="utf-8") + "\nimport trainer  # noqa\n", encoding="utf-8")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0, broken.stdout
    assert "words/ is a leaf" in broken.stdout and "BROKEN" in broken.stdout, broken.stdout
