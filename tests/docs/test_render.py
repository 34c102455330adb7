"""docs/render.py: the figures a page quotes are filled from the results files, never typed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("docs_render", Path(__file__).parents[2] / "docs" / "render.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)

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


@pytest.fixture
def results(tmp_path, monkeypatch):
    (tmp_path / "board.md").write_text(RESULT)
    rows = [{"entry": "paa", "f1": 0.5}, {"entry": "lr", "f1": 0.87654}]
    (tmp_path / "board.json").write_text(json.dumps({"rows": rows, "minutes": 12.5, "PA F1 C=0.1": 0.25}))
    monkeypatch.setattr(render, "RESULTS", tmp_path)
    render._json.cache_clear()
    render._held.cache_clear()
    yield tmp_path
    render._json.cache_clear()
    render._held.cache_clear()


def test_a_heading_gives_its_section_down_to_the_next_heading_of_its_level():
    got = render.section(RESULT, "Binary: the")
    assert got.startswith("| entry | rank |") and "won 3 of 4" in got and "Multiclass" not in got
    assert render.section(RESULT, "Binary default") == "won 3 of 4"
    with pytest.raises(ValueError, match="no heading starting 'Regimes'"):
        render.section(RESULT, "Regimes")


def test_a_page_gets_the_section_and_the_values_its_markers_name(results):
    page = render.DOCS / "some.md"
    text = ("Before.\n<!-- results: board.md -->\nstale\n<!-- /results -->\n"
            "F1 <!-- value: board.json#rows.[entry=lr].f1|.4f -->0.1<!-- /value --> in "
            "<!-- value: board.json#minutes -->?<!-- /value --> min.\n")
    got = render.render(text, page)
    assert "stale" not in got and "# A board" not in got and "commit `abc`" not in got
    assert "won 3 of 4" in got and "| mlr | 1 |" in got
    rel = Path(render.os.path.relpath(results, page.parent)).as_posix()
    assert f"[the other board]({rel}/other.md)" in got and "(https://example.org)" in got
    assert "<!-- value: board.json#rows.[entry=lr].f1|.4f -->0.8765<!-- /value -->" in got
    assert "-->12.5<!-- /value -->" in got
    in_a_table = render.render('| a | <!-- value: board.json#["PA F1 C=0.1"]!.1% -->?<!-- /value --> |', page)
    assert in_a_table == '| a | <!-- value: board.json#["PA F1 C=0.1"]!.1% -->25.0%<!-- /value --> |'
    assert render.render(got, page) == got  # filled once, stable


def test_a_figure_typed_outside_the_markers_is_found(results):
    assert render.typed_figures("F1 0.8765 on a8a, against 0.123 elsewhere") == ["0.8765"]
    marked = "F1 <!-- value: board.json#rows.1.f1|.4f -->0.8765<!-- /value -->\n```\n0.8765\n```\n"
    assert render.typed_figures(marked) == []


def test_a_path_that_names_nothing_fails_with_the_page(results):
    with pytest.raises(SystemExit, match=r"some\.md"):
        render.render("<!-- value: board.json#rows.[entry=vw].f1 -->x<!-- /value -->", render.DOCS / "some.md")


def test_every_page_is_rendered_from_the_committed_results_and_types_no_figure_they_hold():
    assert render.main(["--check"]) == 0
