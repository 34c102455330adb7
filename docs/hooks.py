"""MkDocs hook: serve ``benchmarks/results/`` as ``results/`` in the built site.

The docs quote figures from the results files and link each to its file (``results/NAME.md``). The
files stay where the benchmarks write them; this adds them to the build (Markdown files become pages,
figures and JSON are copied), so the links resolve, ``mkdocs build --strict`` checks them, and the
site needs no network to show them.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path in sorted(RESULTS.rglob("*")):
        if path.is_file():
            uri = "results/" + path.relative_to(RESULTS).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


# <!-- include: NAME.md#Heading --> in a page: the section of results/NAME.md under the heading whose
# text starts with "Heading" (the whole file without its title when no heading is named), so that a
# figure on a page is the one its results file holds, rendered again when the file is regenerated.
INCLUDE = re.compile(r"<!-- include: (?P<name>[\w.-]+\.md)(?:#(?P<heading>[^>]*?))? -->")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")
_LINK = re.compile(r"(\]\()(?!https?:|#|/|results/)([^)\s]+\))")


def section(text: str, heading: str | None) -> str:
    """The lines under ``heading`` up to the next heading of its level or above (all but the title
    and the provenance block if ``heading`` is None); ValueError naming what is missing."""
    lines = text.splitlines()
    if heading is None:
        start, level = 1, 1
    else:
        found = [(i, len(m.group(1))) for i, m in ((i, _HEADING.match(line)) for i, line in enumerate(lines))
                 if m and m.group(2).strip().startswith(heading.strip())]
        if not found:
            raise ValueError(f"no heading starting {heading!r}")
        (start, level), start = found[0], found[0][0] + 1
    end = next((i for i in range(start, len(lines)) if (m := _HEADING.match(lines[i])) and len(m.group(1)) <= level),
               len(lines))
    body = "\n".join(lines[start:end])
    body = re.sub(r"<!-- provenance -->.*?<!-- /provenance -->", "", body, flags=re.S)
    return _LINK.sub(r"\1results/\2", body).strip()


def on_page_markdown(markdown: str, page, config: MkDocsConfig, files: Files) -> str:
    def include(match: re.Match) -> str:
        path = RESULTS / match.group("name")
        try:
            return section(path.read_text(), match.group("heading"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{page.file.src_path}: {match.group(0)}: {e}") from e

    return INCLUDE.sub(include, markdown)
