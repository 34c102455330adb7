"""The service reads like its shape: small modules and classes, short roles that build on nothing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from consumer.process import Role
from consumer.roles import ROLES

CONSUMER = Path(__file__).resolve().parents[3] / "consumer"


def _sources() -> list[Path]:
    return sorted(CONSUMER.rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: p.relative_to(CONSUMER).as_posix())
def test_no_module_over_500_lines_and_no_class_over_300(path):
    text = path.read_text()
    assert text.count("\n") <= 500
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            assert node.end_lineno - node.lineno + 1 <= 300, node.name


@pytest.mark.parametrize("name", sorted(ROLES))
def test_each_role_is_a_short_module_of_its_own_that_builds_on_no_other(name):
    role = ROLES[name]
    path = CONSUMER / "roles" / f"{name}.py"
    assert role.__module__ == f"consumer.roles.{name}"
    assert path.read_text().count("\n") < 120
    assert role.__bases__ == (object,)
    members = {m for m in vars(Role) if not m.startswith("_")} | set(Role.__annotations__)
    missing = {m for m in members if not hasattr(role, m) and m != "sink"}  # the sink is made per process
    assert not missing, missing
