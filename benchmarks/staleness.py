"""Which results files are stale: made at a commit whose measured code has changed since.

A results file's *measured code* is the module its command runs and every module of ``learners``,
``consumer`` and ``benchmarks`` that it imports, transitively. It has changed when one of those
files reads differently, as code (comments, docstrings and layout aside), at HEAD than at the commit
its provenance names. A file made on a tree with uncommitted changes (``+changes``) is stale.
"""

from __future__ import annotations

import ast
import functools
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from benchmarks.leaderboard import _code_of

__all__ = ["changed_since", "measured_files"]

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("learners", "consumer", "benchmarks")
# what runs the benchmarks and stamps their files, not what they measure (reproduce imports every
# benchmark for its checks)
NOT_MEASURED = frozenset({"benchmarks/reproduce.py", "benchmarks/staleness.py", "benchmarks/__init__.py"})


def _module_file(module: str, root: Path) -> str | None:
    """The repository path of ``module`` (a package's ``__init__.py``), if it is one of ours."""
    if module.split(".")[0] not in PACKAGES:
        return None
    base = module.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        if (root / rel).exists():
            return rel
    return None


@functools.cache
def _imports(rel: str, root: Path = ROOT) -> tuple[str, ...]:
    """Our modules that ``rel`` imports, anywhere in it (lazy imports inside functions included)."""
    found: list[str] = []
    package = rel.rsplit("/", 1)[0].replace("/", ".")
    for node in ast.walk(ast.parse((root / rel).read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x, from .y import z
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}".rstrip(".")
            names = [base, *(f"{base}.{a.name}" for a in node.names)]
        found += [f for f in (_module_file(n, root) for n in names) if f and f not in NOT_MEASURED]
    return tuple(found)


def measured_files(command: Sequence[str], root: Path = ROOT) -> list[str]:
    """The files a results command measures: its module and our modules it imports, transitively."""
    start = (_module_file(command[1], root) if command[0] == "-m" else command[0])
    todo, seen = [start] if start else [], set()
    while todo:
        rel = todo.pop()
        if rel not in seen:
            seen.add(rel)
            todo += _imports(rel, root)
    return sorted(seen)


def _code_at(rev: str, rel: str, root: Path) -> str | None:
    shown = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=root, capture_output=True, text=True)
    if shown.returncode != 0:
        return None  # the file did not exist then
    try:
        return _code_of(shown.stdout)
    except SyntaxError:
        return shown.stdout


def changed_since(commit: str, files: Iterable[str], root: Path = ROOT) -> list[str]:
    """The ``files`` whose code differs between ``commit`` and the working tree (all of them when the
    commit is unknown or was made with uncommitted changes)."""
    files = list(files)
    if not commit or "+" in commit or commit == "unknown":
        return files
    known = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root, capture_output=True)
    if known.returncode != 0:
        return files
    return [rel for rel in files if _code_at(commit, rel, root) != _code_of((root / rel).read_text())]
