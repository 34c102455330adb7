"""MkDocs hook: serve ``benchmarks/results/`` as ``results/`` in the built site.

The docs quote figures from the results files and link each to its file (``results/NAME.md``). The
files stay where the benchmarks write them; this adds them to the build (Markdown files become pages,
figures and JSON are copied), so the links resolve, ``mkdocs build --strict`` checks them, and the
site needs no network to show them. Each evidence page (``benchmarks.reproduce.EVIDENCE_PAGES``) gets
a header naming the results files it quotes, the commit and date each was made at, and the code
commits since.
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


def _results_entries():
    """benchmarks.reproduce's registry of results files (None when the package cannot be imported)."""
    import sys

    root = str(RESULTS.parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        from benchmarks import reproduce
    except ImportError:
        return None
    return reproduce


def _code_commits_since(commit: str) -> str:
    import subprocess

    if not commit or "+" in commit:
        return "unknown (made with uncommitted changes)" if commit else "unknown"
    got = subprocess.run(["git", "rev-list", "--count", f"{commit}..HEAD", "--", "learners", "consumer", "benchmarks"],
                         cwd=RESULTS.parent.parent, capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 else "unknown"


def evidence_header(markdown: str, src_path: str) -> str:
    """An evidence page's header: each results file it quotes, made at which commit and when, and the
    code commits (learners, consumer, benchmarks) since, so that a reader sees how old a figure is."""
    reproduce = _results_entries()
    if reproduce is None or not any(Path(src_path).match(p) for p in reproduce.EVIDENCE_PAGES):
        return markdown
    names = set(re.findall(r"results/([\w.-]+\.(?:md|json|png))", markdown))
    names |= set(re.findall(r"<!-- (?:results|value): ([\w.-]+\.(?:md|json))", markdown))
    rows = []
    for entry in reproduce.RESULTS:
        if names & set(entry.files):
            facts = reproduce.provenance(entry) or {}
            commit = facts.get("commit", "")
            kind = "timing" if entry.timing else "re-checked at HEAD by CI" if entry.check else "—"
            rows.append(f"| `{entry.name}` | `{commit or 'unstamped'}` | {facts.get('made', '—')} | "
                        f"{_code_commits_since(commit)} | {kind} |")
    if not rows:
        return markdown
    table = ["!!! info \"The results this page quotes\"", "",
             "    | results | made at | on | code commits since | |", "    |---|---|---|---|---|",
             *(f"    {r}" for r in rows), ""]
    lines = markdown.splitlines()
    at = 1 if lines and lines[0].startswith("# ") else 0
    return "\n".join([*lines[:at], "", *table, *lines[at:]])


def on_page_markdown(markdown: str, page, config: MkDocsConfig, files: Files) -> str:
    return evidence_header(markdown, page.file.src_path)
