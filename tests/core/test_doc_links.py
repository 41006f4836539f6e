"""The README and docs/ link to each other, to the code and to the console's screenshots: every
relative link must reach a file, and every `#anchor` a heading of the file it points at (as GitHub
derives a heading's anchor), so a moved section or a renamed file is caught here rather than by a
reader. The README stays an operator's page: short enough to read before the first deploy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def prose(path: Path) -> str:
    """The text a reader follows links in: fenced blocks and inline code are not links."""
    return CODE.sub("", FENCE.sub("", path.read_text()))


def anchors(path: Path) -> set[str]:
    """GitHub's anchors: lower case, punctuation dropped but `-` and `_`, spaces to `-`, and a
    repeated heading numbered from `-1`."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text())):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path)) if not re.match(r"^[a-z]+:", target)]


def test_the_documents_have_relative_links_to_check() -> None:
    assert (ROOT / "docs" / "api.md") in DOCUMENTS
    assert any("#" in link for link in relative_links(ROOT / "README.md"))


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_every_anchor_a_heading(document: Path) -> None:
    broken = []
    for link in relative_links(document):
        target, _, anchor = link.partition("#")
        file = (document.parent / target).resolve() if target else document
        if not file.exists():
            broken.append(f"{link}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{link}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert broken == []


def test_the_readme_is_short_enough_to_follow_before_a_first_deploy() -> None:
    # what it is, the two commands, the path to a first message and one screen per capability: the
    # reference lives in docs/
    assert len((ROOT / "README.md").read_bytes()) <= 14_336
