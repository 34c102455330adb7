"""Fill the figures the pages quote from the results files: ``python docs/render.py``.

A page never types a figure a results file holds; it marks where the figure goes, and this script
writes it there from the file, so a page cannot disagree with its file:

* a section of a results page, between two markers (the whole page without its title and
  provenance when no heading is named; the section under the first heading that starts with the
  text after ``#`` otherwise, down to the next heading of its level)::

      <!-- results: leaderboard_regimes.md#Binary: the ranking -->
      (written by this script)
      <!-- /results -->

* one value of a results JSON, inline: a path of keys, list indices, ``["a key"]`` (a key with
  dots or spaces) and ``[key=value,...]`` filters (the first item of a list that matches), and a
  format spec after ``!`` (or ``|``, outside a table, whose cells ``|`` would split)::

      <!-- value: startup.json#ours.wall_s!.3f -->0.095<!-- /value -->

``python docs/render.py --check`` writes nothing and exits 1 when a page differs from what the
files give, or when a page types a figure outside the markers that a results file holds (a number
with three decimals or more that some value of a results JSON rounds to); ``tests/docs`` runs both.
Links inside an included section are made relative to the page.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"

BLOCK = re.compile(r"(?P<open><!-- results: (?P<name>[\w./-]+\.md)(?:#(?P<heading>[^>]*?))? -->\n)"
                   r"(?P<body>.*?)(?P<close><!-- /results -->)", re.S)
VALUE = re.compile(r"(?P<open><!-- value: (?P<name>[\w./-]+\.json)#(?P<path>(?:\[[^\]]*\]|[^|!>\[])*?)"
                   r"(?:[|!](?P<fmt>[^>]*?))? -->)(?P<body>.*?)(?P<close><!-- /value -->)")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_LINK = re.compile(r"(\]\()(?!https?:|#|/)([^)\s]+)(\))")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_TYPED = re.compile(r"(?<![\w.`/-])(\d+\.\d{3,})(?![\w`])")


def section(text: str, heading: str | None) -> str:
    """The lines under ``heading`` down to the next heading of its level or above (without the
    title and the provenance block if ``heading`` is None); ValueError if there is no such heading."""
    text = re.sub(r"<!-- provenance -->.*?<!-- /provenance -->\n?", "", text, flags=re.S)
    lines = text.splitlines()
    if heading is None:
        start, level = (1, 1) if lines and lines[0].startswith("# ") else (0, 1)
    else:
        found = [(i, len(m.group(1))) for i, line in enumerate(lines)
                 if (m := _HEADING.match(line)) and m.group(2).strip().startswith(heading.strip())]
        if not found:
            raise ValueError(f"no heading starting {heading!r}")
        start, level = found[0][0] + 1, found[0][1]
    end = next((i for i in range(start, len(lines)) if (m := _HEADING.match(lines[i])) and len(m.group(1)) <= level),
               len(lines))
    return "\n".join(lines[start:end]).strip()


def _relink(body: str, page: Path) -> str:
    """Links of a results page, relative to ``page``."""
    base = Path(os.path.relpath(RESULTS, page.parent))
    return _LINK.sub(lambda m: f"{m.group(1)}{(base / m.group(2)).as_posix()}{m.group(3)}", body)


@cache
def _json(name: str) -> Any:
    return json.loads((RESULTS / name).read_text())


def lookup(data: Any, path: str) -> Any:
    """The value at ``path`` in ``data``: keys and indices separated by dots, ``["a key"]`` a key as
    written (dots and spaces included), ``[k=v,...]`` the first item of a list whose fields have those
    values (compared as text)."""
    for part in re.findall(r"\[[^\]]*\]|[^.\[\]]+", path):
        if part.startswith('["') and part.endswith('"]'):
            data = data[part[2:-2]]
        elif part.startswith("["):
            want = dict(kv.split("=", 1) for kv in part[1:-1].split(","))
            matches = [item for item in data if all(str(item.get(k)) == v for k, v in want.items())]
            if not matches:
                raise KeyError(f"no item with {part}")
            data = matches[0]
        elif isinstance(data, list):
            data = data[int(part)]
        else:
            data = data[part]
    return data


def render_value(name: str, path: str, fmt: str | None) -> str:
    value = lookup(_json(name), path)
    return format(value, fmt) if fmt else str(value)


def render(text: str, page: Path) -> str:
    """``text`` with every marked section and value filled from the results files."""
    def block(m: re.Match) -> str:
        body = _relink(section((RESULTS / m.group("name")).read_text(), m.group("heading")), page)
        return f"{m.group('open')}{body}\n{m.group('close')}"

    def value(m: re.Match) -> str:
        return f"{m.group('open')}{render_value(m.group('name'), m.group('path'), m.group('fmt'))}{m.group('close')}"

    try:
        return VALUE.sub(value, BLOCK.sub(block, text))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        raise SystemExit(f"{page.relative_to(ROOT)}: {e}") from e


@cache
def _held() -> frozenset[str]:
    """Every number of every results JSON, as text at 3 to 6 decimals: what a typed figure would read."""
    out: set[str] = set()

    def walk(x: Any) -> Iterator[float]:
        if isinstance(x, dict):
            for v in x.values():
                yield from walk(v)
        elif isinstance(x, list):
            for v in x:
                yield from walk(v)
        elif isinstance(x, float):
            yield x

    for path in RESULTS.rglob("*.json"):
        for v in walk(json.loads(path.read_text())):
            out.update(f"{v:.{k}f}" for k in range(3, 7))
    return frozenset(out)


def typed_figures(text: str) -> list[str]:
    """Numbers of three decimals or more outside the markers and code blocks that a results file holds."""
    bare = VALUE.sub("", BLOCK.sub("", _FENCE.sub("", text)))
    return [n for n in _TYPED.findall(bare) if n in _held()]


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.relative_to(DOCS).parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a page out of date or a "
                        "typed figure")
    args = parser.parse_args(argv)
    failed = False
    for page in pages():
        text = page.read_text()
        new = render(text, page)
        typed = typed_figures(new)
        if typed:
            failed = True
            print(f"{page.relative_to(ROOT)}: typed figures a results file holds (mark them): {', '.join(typed)}",
                  file=sys.stderr)
        if new != text:
            if args.check:
                failed = True
                print(f"{page.relative_to(ROOT)}: out of date with the results files (python docs/render.py)",
                      file=sys.stderr)
            else:
                page.write_text(new)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
