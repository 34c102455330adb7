"""The modules of a package import each other without a circle.

Every ``import`` and ``from … import`` counts, wherever it stands (inside a function too: a lazy
import hides a circle from the interpreter, not from a reader). ``from pkg import sub``, where
``sub`` is a module, is an edge to ``pkg.sub``, not to ``pkg/__init__.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules_of(package_dir: Path) -> dict[str, Path]:
    """Every module under ``package_dir`` by its dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _targets(node: ast.AST, module: str, is_package: bool, known: Mapping[str, Path]) -> Iterator[str]:
    """The dotted names an import statement in ``module`` reaches for (modules or packages)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the module's package, one package up per extra dot
            package = module.split(".") if is_package else module.split(".")[:-1]
            anchor = package[: len(package) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in known else base


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module → the modules of the same package it imports."""
    known = modules_of(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            graph[name].update(t for t in _targets(node, name, is_package, known) if t in known and t != name)
    return graph


def strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v roots a component: everything above it on the stack
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def circle_in(component: list[str], graph: Mapping[str, set[str]]) -> list[str]:
    """One circle through the component's first module, as the path a reader would follow
    (breadth first, so the shortest)."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & inside):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{component} is not strongly connected")


def circles(package_dir: Path) -> list[str]:
    """A circle of imports per knot of the package, written ``a → b → a`` (followed by every module
    of the knot when it holds more than that circle)."""
    graph = import_graph(package_dir)
    found = []
    for component in strongly_connected(graph):
        circle = circle_in(component, graph)
        knot = f" (knotted together: {', '.join(component)})" if len(component) > len(circle) - 1 else ""
        found.append(" → ".join(circle) + knot)
    return found


@pytest.mark.parametrize("package", ["learners", "consumer"])
def test_the_modules_of_a_package_import_each_other_without_a_circle(package):
    found = circles(ROOT / package)
    assert not found, "import circles:\n" + "\n".join(found)


def _package(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_circle_through_an_import_inside_a_function_is_named(tmp_path):
    package = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import f\n",
        "pkg/b.py": "def f():\n    from pkg import a\n    return a\n",
    })
    assert circles(package) == ["pkg.a → pkg.b → pkg.a"]


def test_from_a_package_import_a_submodule_is_an_edge_to_the_submodule_not_the_package(tmp_path):
    package = _package(tmp_path, {
        "pkg/__init__.py": "from pkg.a import A\n",
        "pkg/a.py": "from pkg import b\nA = b.B\n",
        "pkg/b.py": "B = 1\n",
    })
    assert import_graph(package) == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}
    assert circles(package) == []


def test_relative_imports_resolve_from_the_module_s_package(tmp_path):
    package = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from . import x\n",
        "pkg/sub/x.py": "from .. import top\nfrom .y import Y\n",
        "pkg/sub/y.py": "Y = 1\n",
        "pkg/top.py": "from .sub.x import top\n",
    })
    graph = import_graph(package)
    assert graph["pkg.sub"] == {"pkg.sub.x"}
    assert graph["pkg.sub.x"] == {"pkg.top", "pkg.sub.y"}
    assert circles(package) == ["pkg.sub.x → pkg.top → pkg.sub.x"]
