"""``bench/results/latest.md`` is what the renderer makes of ``bench/results/latest.json``, and
nothing else: regenerated here, it must come out byte for byte the same (after a change of the
JSON or of the renderer, run ``python -m bench --render``). Its tables are well formed, and a
ratio column says which ratio it shows (the benchmarks report medians of per-run or per-sample
ratios next to medians; the ratio of the two medians shown is a different number)."""

from __future__ import annotations

import shutil
from pathlib import Path

from bench.__main__ import render

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def _tables(text: str) -> list[list[str]]:
    """Every markdown table of ``text``: its consecutive ``|`` lines."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def test_latest_md_is_rendered_from_latest_json(tmp_path: Path) -> None:
    shutil.copy(RESULTS / "latest.json", tmp_path / "latest.json")
    rendered = render(tmp_path)
    assert rendered == (RESULTS / "latest.md").read_text(), (
        "bench/results/latest.md differs from what bench renders from latest.json: "
        "run `python -m bench --render` and commit both"
    )


def test_latest_md_tables_are_well_formed_and_name_their_ratios() -> None:
    text = (RESULTS / "latest.md").read_text()
    tables = _tables(text)
    assert tables, "no table in latest.md"
    for table in tables:
        header, separator, *rows = table
        width = len(_cells(header))
        assert set("".join(_cells(separator))) == {"-"}, f"no separator under {header}"
        assert len(_cells(separator)) == width, f"separator of {header} has another width"
        for row in rows:
            assert len(_cells(row)) == width, f"{row} has not the {width} cells of {header}"
        for name in _cells(header):
            if "ratio" in name:
                assert "median of per-" in name, f"ratio column {name!r} does not say which ratio"
