"""The README is a landing page: short, with the test command, and links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")


def _anchors(page: Path) -> set[str]:
    """Heading ids as MkDocs' toc extension makes them (lower case, punctuation dropped, spaces → -)."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\s-]", "", heading.strip().lower())
        out.add(re.sub(r"[\s]+", "-", slug).strip("-"))
    return out


def test_readme_is_at_most_250_lines_and_names_the_test_command():
    assert README.count("\n") <= 250
    assert "bash .ci/run" in README and "activestream demo" in README


def test_every_relative_link_of_the_readme_resolves_to_a_file_and_heading():
    links = [(target, anchor) for target, anchor in LINK.findall(README) if "://" not in target]
    assert len(links) > 10
    for target, anchor in links:
        path = ROOT / target
        assert path.exists(), f"README links to {target}, which does not exist"
        if anchor:
            assert anchor in _anchors(path), f"README links to {target}#{anchor}, which has no such heading"
