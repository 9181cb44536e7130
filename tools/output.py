"""What a command prints on stdout, for a person or for a pipeline (docs/reference/output.md).

* :func:`stdout_console`: the rich console the text reports print to. At a terminal it has the
  terminal's width (columns that hold paths fold rather than cut); anywhere else (a file, a
  pipe) it is unbounded and colourless, so ``deltaguard orphans T > report.txt`` keeps every
  path whole and greppable.
* ``--format text|json|tsv`` (:func:`format_option`) on the commands that print tables
  (``audit``: the findings, ``history``: the commits, ``orphans``: the files). ``--json`` stays
  as it was and means ``--format json``. :func:`write_tsv` writes one header line and one row
  per item, tab-separated, quoted the way Python's ``csv`` module reads back (``excel-tab``).
"""

from __future__ import annotations

import csv
import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

TEXT, JSON, TSV = "text", "json", "tsv"
FORMATS = (TEXT, JSON, TSV)
#: The console width when stdout is not a terminal: wide enough that no line is ever cut.
UNBOUNDED_WIDTH = 1_000_000


def stdout_console() -> Console:
    """The console for a text report on stdout (see the module docstring)."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=UNBOUNDED_WIDTH, no_color=True, highlight=False)


def write_tsv(
    header: Sequence[str], rows: Iterable[Sequence[object]], out: IO[str] | None = None
) -> None:
    """``header`` and ``rows`` as TSV on ``out`` (default stdout); None is an empty field."""
    writer = csv.writer(out or sys.stdout, dialect="excel-tab", lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])


def format_option(f: F) -> F:
    """``--format text|json|tsv`` beside the command's ``--json`` flag (parameter
    ``as_json``): the command receives both, made to agree (``as_json`` is True exactly when
    the format is json). ``--json`` with another ``--format`` is a usage error."""

    @functools.wraps(f)
    def run(*args: Any, fmt: str | None, as_json: bool, **kwargs: Any) -> Any:
        if as_json and fmt not in (None, JSON):
            raise click.UsageError(f"--json and --format {fmt} contradict each other")
        chosen = JSON if as_json else (fmt or TEXT)
        return f(*args, fmt=chosen, as_json=chosen == JSON, **kwargs)

    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="text (default; whole paths when stdout is not a terminal), json (= --json), or "
        "tsv: one row per item with a header, for pipelines (docs/reference/output.md)",
    )(run)  # type: ignore[return-value]
