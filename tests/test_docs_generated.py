"""The documentation as a map that cannot drift (fast: no servers, no Spark).

* The generated pages (``docs/generate.py``: the CLI reference from the click tree, the exit
  codes from :class:`ExitCode`, the presets and Spark lines, ``docs/benchmarks.md`` from
  ``bench/results/latest.json``) are what the generator makes of the code now, byte for byte
  (after a change: ``make docs``, then commit the pages).
* Every relative link in README.md and docs/ names a file that exists and, for a markdown
  page, a heading that page has (GitHub's anchors).
* Every fully qualified cross-reference in a docstring (``:func:`deltaguard...```) names
  something that exists.
* Every page says who it is for in its first line (``For: ...``).
* Measured figures with a date live in docs/benchmarks.md only: no other page carries a
  dated run or a load average.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
#: Words that make a dated line a measurement ("measured 2026-11-23", "medians of 3 runs, ...").
MEASURED = re.compile(
    r"measured|median|load average|\bone run\b|\bruns of\b|took \d", re.IGNORECASE
)


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of ``path`` outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for _, line in _prose(path):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading:
            base = _anchor(heading.group(1))
            anchor, n = base, 0
            while anchor in found:  # GitHub numbers repeated headings: -1, -2, ...
                n += 1
                anchor = f"{base}-{n}"
            found.add(anchor)
    return found


def test_generated_pages_are_what_the_code_makes(tmp_path: Path) -> None:
    generator = _generator()
    stale = []
    for written in generator.write(tmp_path):
        rel = written.relative_to(tmp_path)
        committed = DOCS / rel
        if not committed.exists() or committed.read_text() != written.read_text():
            stale.append(str(rel))
    assert stale == [], f"docs/{stale} differ from what docs/generate.py makes: run `make docs`"


def test_relative_links_resolve() -> None:
    broken = []
    for page in PAGES:
        for number, line in _prose(page):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z]+:", target):  # https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                linked = (page.parent / file_part).resolve() if file_part else page
                where = f"{page.relative_to(REPO)}:{number}: {target}"
                if not linked.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                    broken.append(f"{where} (no such heading)")
    assert broken == [], "broken links:\n" + "\n".join(broken)


#: A docs page named in code, scripts, tests or build files (messages and comments point there).
DOC_PATH = re.compile(r"docs/[\w./-]+\.md")


def test_doc_pages_named_outside_docs_exist() -> None:
    """Pages move (the orphans page became a guide and a design note): every page under
    docs/ that a tracked file outside docs/ names must still exist."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = []
    for name in tracked:
        path = REPO / name
        if name.startswith("docs/") or path.suffix not in {".py", ".sh", ".toml", ".java", ""}:
            continue
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            missing += [f"{name}:{number}: {m}" for m in DOC_PATH.findall(line)
                        if not (REPO / m).is_file()]  # fmt: skip
    assert missing == [], "pages that do not exist:\n" + "\n".join(missing)


#: A fully qualified Sphinx cross-reference in a docstring: ``:func:`deltaguard.x.y```.
XREF = re.compile(r":(?:func|class|mod|meth|data|attr|exc):`~?(deltaguard(?:\.\w+)+)`")
SOURCE_ROOTS = ("tools", "logstore/python", "spark_conf", "localstack")


def _resolves(name: str) -> bool:
    """Whether ``name`` is a module, or an attribute path below the longest importable
    module prefix of it."""
    parts = name.split(".")
    for cut in range(len(parts), 1, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_docstring_cross_references_resolve() -> None:
    """Code moves (``StorageError`` left ``deltalog.errors`` for ``storage.errors``): every
    fully qualified ``:func:``/``:class:``/``:mod:``... reference in the package's sources
    names something that exists."""
    broken = [
        f"{path.relative_to(REPO)}: {name}"
        for root in SOURCE_ROOTS
        for path in sorted((REPO / root).rglob("*.py"))
        if not {"build", "target"} & set(path.parts)
        for name in XREF.findall(path.read_text())
        if not _resolves(name)
    ]
    assert broken == [], "references to nothing:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_each_page_says_who_it_is_for(page: Path) -> None:
    if page == REPO / "README.md":
        return  # the project's front page: what it is, for whom, in its first paragraph
    first = page.read_text().splitlines()[0]
    assert first.startswith("For: "), f"{page.relative_to(REPO)}: first line {first!r}"


def test_dated_measurements_live_in_benchmarks_md_only() -> None:
    dated = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()[:100]}"
        for page in PAGES
        if page != DOCS / "benchmarks.md"
        for number, line in _prose(page)
        if "load average" in line.lower() or (DATE.search(line) and MEASURED.search(line))
    ]
    assert dated == [], "dated measurements outside docs/benchmarks.md:\n" + "\n".join(dated)
