"""MkDocs hook: serve ``benchmarks/results/`` as ``results/`` in the built site.

The docs quote figures from the results files and link each to its file (``results/NAME.md``). The
files stay where the benchmarks write them; this adds them to the build (Markdown files become pages,
figures and JSON are copied), so the links resolve, ``mkdocs build --strict`` checks them, and the
site needs no network to show them.
"""

from __future__ import annotations

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
