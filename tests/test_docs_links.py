"""Every link in README.md and docs/ leads somewhere, and the README stays a front page.

Links are read with a careful regular expression, not a Markdown parser (none is installed in
the project's environment): inline links and images, `[text](target)` and `![alt](target)`,
reference definitions (`[label]: target`) and HTML `<img src="…">` / `<a href="…">`, all
outside fenced code blocks and inline code spans. Anchors are compared with GitHub's heading
slugs: lowercase, punctuation stripped, each space a hyphen, a repeated slug gets -1, -2, ….

External links (http, https, mailto, …) cannot be checked offline, so they are skipped on
purpose: these tests check only what lives in this repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
while not (ROOT / "pyproject.toml").is_file() and ROOT.parent != ROOT:  # tests/ may gain sub-folders
    ROOT = ROOT.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
"""A scheme (http:, https:, mailto:, …): a link out of the repository, which is not checked."""


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose_lines(text: str, *, keep_code_spans: bool = False) -> list[str]:
    """The file's lines with fenced code blocks blanked and (unless kept) inline code spans removed."""
    lines, fence = [], None
    for line in text.splitlines():
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            lines.append("")
        elif fence is not None:
            closes = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
            if closes and not line.strip().lstrip(fence[0]):
                fence = None
            lines.append("")
        else:
            lines.append(line if keep_code_spans else CODE_SPAN.sub("", line))
    return lines


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link and image in prose."""
    found = []
    for number, line in enumerate(prose_lines(text), start=1):
        targets = [m.group(1) for m in INLINE_LINK.finditer(line)]
        targets += [m.group(1) for m in HTML_LINK.finditer(line)]
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            targets.append(definition.group(1))
        found += [(number, target.strip("<>")) for target in targets]
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its rendered text, lowercased, punctuation dropped."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", heading)  # images render no text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link renders as its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for line in prose_lines(text, keep_code_spans=True):
        heading = ATX_HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def local_links(page: Path) -> list[tuple[int, Path, str]]:
    """(line, file the link points at, anchor or "") for every link that stays in the repository."""
    result = []
    for number, target in links(page.read_text(encoding="utf-8")):
        if EXTERNAL.match(target):
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / unquote(path)).resolve() if path else page
        result.append((number, file, unquote(fragment)))
    return result


def where(page: Path, number: int) -> str:
    return f"{page.relative_to(ROOT)}:{number}"


def test_every_relative_link_in_readme_and_docs_points_at_a_file_that_exists():
    checked, broken = 0, []
    for page in pages():
        for number, file, _ in local_links(page):
            checked += 1
            if not file.exists():
                broken.append(f"{where(page, number)} -> {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
    assert checked > 20, "the link reader found almost no links: is it still reading them?"
    assert broken == [], "links to files that do not exist:\n" + "\n".join(broken)


def test_every_anchor_link_points_at_a_heading_on_its_page():
    checked, broken = 0, []
    for page in pages():
        for number, file, fragment in local_links(page):
            if not fragment or file.suffix != ".md" or not file.is_file():
                continue
            checked += 1
            if fragment not in anchors(file.read_text(encoding="utf-8")):
                broken.append(f"{where(page, number)} -> {file.relative_to(ROOT)}#{fragment}")
    assert checked > 5, "the link reader found almost no anchor links: is it still reading them?"
    assert broken == [], "anchors that name no heading on their page:\n" + "\n".join(broken)


def test_the_readme_front_page_is_at_most_300_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move the detail into a page under docs/"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {file for _, file, _ in local_links(README)}
    unlinked = [p.relative_to(ROOT).as_posix() for p in sorted(DOCS.rglob("*.md")) if p.resolve() not in linked]
    assert unlinked == [], f"docs pages the README never links to: {unlinked}"


def test_every_docs_page_says_what_it_covers_and_links_back_to_the_readme():
    for page in sorted(DOCS.rglob("*.md")):
        lines = [line for line in page.read_text(encoding="utf-8").splitlines() if line.strip()]
        assert lines and lines[0].startswith("# "), f"{page.relative_to(ROOT)} does not start with a title"
        opening = lines[1] if len(lines) > 1 else ""
        back = [file for _, file, _ in local_links(page) if file == README]
        assert back, f"{page.relative_to(ROOT)} never links back to the README"
        assert "README.md" in opening, (
            f"{page.relative_to(ROOT)}: the line under the title should say what the page covers "
            f"and link back to the README, not {opening!r}")


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Work mode: background jobs", "work-mode-background-jobs"),
    ("Who she answers: listening modes, her name and the wake word",
     "who-she-answers-listening-modes-her-name-and-the-wake-word"),
    ("llama.cpp's `llama-server`", "llamacpps-llama-server"),
    ("`companion voice` and `companion listen`: her voice without a window",
     "companion-voice-and-companion-listen-her-voice-without-a-window"),
    ("Settings → Voice", "settings--voice"),
])
def test_a_heading_anchor_is_the_one_github_makes(heading, anchor):
    assert slug(heading) == anchor


def test_a_repeated_heading_gets_a_numbered_anchor():
    assert anchors("# Notes\n\n## Notes\n\n### Notes\n") == {"notes", "notes-1", "notes-2"}


def test_links_are_read_from_prose_and_html_but_not_from_code():
    text = "\n".join([
        "See [the guide](docs/user-guide.md#talking-to-her) and ![a face](docs/images/window.png).",
        '<img src="docs/images/compact.png" alt="">',
        "[ref]: docs/safety.md",
        "Not this: `[x](missing.md)`.",
        "```markdown",
        "[also not](missing-too.md)",
        "## Not a heading",
        "```",
    ])
    assert [target for _, target in links(text)] == [
        "docs/user-guide.md#talking-to-her", "docs/images/window.png", "docs/images/compact.png", "docs/safety.md"]
    assert anchors(text) == set()
