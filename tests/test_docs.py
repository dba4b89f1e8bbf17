"""The README is a landing page and docs/ holds the rest: no section of the long README was lost on the way, the
README stays short, every relative link in the Markdown resolves, and the code's comments cite pages a person
who clones the repository can open (not a design note or source texts kept outside it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 300

# Every heading of the README as it was at commit db63c61 (before it was split into docs/), outside ``` fences.
FORMER_HEADINGS = (
    "# LoRA Doctor",
    "## Quick start",
    "### Windows and CUDA",
    "### App options",
    "### Safety: what is refused and why",
    "### What a crash costs",
    "## The demo world",
    "### Demo status",
    "## The headless CLI",
    "### Captioning",
    "### Keeping the character behind its trigger",
    "### LoRA on the convolutions",
    "### Stable Diffusion 3.5",
    "### Step count and dose",
    "### Will it fit?",
    "### One verdict",
    "### The doctor reads your own subject",
    "### A run folder",
    "### Validation loss and comparing runs",
    "### Pause and Continue",
    "### TensorBoard (optional)",
    "## Coming from kohya_ss",
    "## How the numbers are kept right",
    "## Performance",
    "## Development",
    "### Code layout",
    "## 한국어",
    "### 빠른 시작",
    "### 핵심 개념",
    "### 들어갈까? (메모리 계획)",
    "### 명령줄",
    "### kohya_ss에서 옮겨 오기",
    "### 안전",
    "### 검증 손실과 실행 비교",
    "### 의사는 내 대상을 읽는다",
    "### 일시정지와 계속",
    "### TensorBoard (선택)",
    "## Contributing",
    "### Adding a model family",
    "### Adding an optimizer",
    "### Adding a symptom",
    "### 기여하기: 옵티마이저 추가",
    "### 기여하기: 증상 추가",
)

# The code's comments once cited DESIGN.md and "the seeds" (two source texts): neither is in the repository.
# A random seed ("three seeds", "training seeds", "--seeds") is not a citation and does not match.
CITES_OUTSIDE = re.compile(r"DESIGN\.md|\b[Tt]he seeds(?:'|:|\)|\s+(?:advise|say|rule))|\bseed texts?\b|\bseeds/")
CODE_ROOTS = ("trainer", "ui", "words", "bench", "scripts", "app.py")

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+).*?\1")


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def prose_lines(path: Path) -> list[str]:
    """The file's lines outside ``` fences (a '#' there is a shell comment, a '[..](..)' is code)."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def headings(path: Path) -> set[str]:
    return {line.rstrip() for line in prose_lines(path) if re.match(r"#{1,6} ", line)}


def relative_links(path: Path) -> list[str]:
    """The link and image targets that point into the repository: no web addresses, no bare #anchors."""
    found = []
    for line in prose_lines(path):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue
            found.append(target)
    return found


def test_every_former_readme_heading_survives_in_the_readme_or_docs():
    present = set().union(*(headings(p) for p in markdown_files()))
    missing = [h for h in FORMER_HEADINGS if h not in present]
    assert not missing, f"headings of the old README found nowhere in README.md or docs/: {missing}"


def test_the_readme_is_a_short_landing_page_that_keeps_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    quick = text[text.index("## Quick start"):]
    assert "./start.sh" in quick and "./test.sh" in quick  # .ci/run and the tests rely on them


def test_every_relative_link_in_the_markdown_resolves():
    broken = []
    for path in markdown_files():
        for target in relative_links(path):
            file = target.split("#", 1)[0]
            if not (path.parent / file).exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_the_link_reader_sees_links_and_images_but_not_code_or_the_web(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See [a](a.md#part) and ![b](img/b.png) and [web](https://x.org) and [up](#top).\n"
                    "`[not](code.md)`\n```\n[nor](fenced.md)\n```\n", encoding="utf-8")
    assert relative_links(page) == ["a.md#part", "img/b.png"]


def code_files() -> list[Path]:
    files = []
    for root in CODE_ROOTS:
        path = REPO / root
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def test_no_code_comment_cites_a_document_outside_the_repository():
    cites = [f"{p.relative_to(REPO)}:{n}: {line.strip()}"
             for p in code_files() for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if CITES_OUTSIDE.search(line)]
    assert not cites, "cite a page under docs/ instead:\n" + "\n".join(cites)


@pytest.mark.parametrize("line, cites", [
    ("Exit codes (DESIGN.md): 0 finished", True),
    ("Rules (DESIGN.md, from the seeds): frozen weights", True),
    ('"""The one change a rollback applies (the seeds: change one thing at a time).', True),
    ("The seeds' four prompt kinds are the defaults", True),
    ("(the seeds advise against it)", True),
    ("Written from the seed texts", True),
    ("three seeds) single steps reached 33x the", False),
    ("python scripts/demo_lora_check.py  # training seeds 42 (the preset's), 1 and 2", False),
    ("ap.add_argument('--seeds', type=int, default=16, help='seeds per prompt')", False),
    ("Several files (one prompt's seeds) are tiled in one picture", False),
    ("a prompt kind's burn over its pictures (seeds)", False),
])
def test_the_citation_pattern_tells_a_source_from_a_random_seed(line, cites):
    assert bool(CITES_OUTSIDE.search(line)) is cites
