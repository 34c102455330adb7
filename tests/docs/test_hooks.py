"""docs/hooks.py: a page's <!-- include: … --> is the section its results file holds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("docs_hooks", Path(__file__).parents[2] / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hooks)

RESULT = """# A board

<!-- provenance -->
> Made at commit `abc`.
<!-- /provenance -->

Read [the other board](other.md) and ![a figure](board.png), or [a site](https://example.org).

## Binary: the ranking

| entry | rank |
|---|---|
| lr | 1.5 |

### Binary default `lr` against the peers

won 3 of 4

## Multiclass: the ranking

| mlr | 1 |
"""


def test_a_heading_gives_its_section_down_to_the_next_heading_of_its_level():
    got = hooks.section(RESULT, "Binary: the")
    assert got.startswith("| entry | rank |") and "won 3 of 4" in got and "Multiclass" not in got
    assert hooks.section(RESULT, "Binary default") == "won 3 of 4"


def test_the_whole_file_drops_its_title_and_provenance_and_its_links_point_into_results():
    got = hooks.section(RESULT, None)
    assert "# A board" not in got and "provenance" not in got and "commit `abc`" not in got
    assert "[the other board](results/other.md)" in got and "![a figure](results/board.png)" in got
    assert "(https://example.org)" in got


def test_a_missing_heading_is_named():
    with pytest.raises(ValueError, match="no heading starting 'Regimes'"):
        hooks.section(RESULT, "Regimes")


def test_every_include_in_the_docs_names_a_results_file_and_a_section_it_holds():
    docs = Path(__file__).parents[2] / "docs"
    found = 0
    for page in docs.rglob("*.md"):
        for match in hooks.INCLUDE.finditer(page.read_text()):
            found += 1
            assert hooks.section((hooks.RESULTS / match.group("name")).read_text(), match.group("heading")), match[0]
    assert found
