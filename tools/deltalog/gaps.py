"""The versions a log is missing, read from one listing: the audit's version findings
(``version-gap``, ``version-gap-covered``, ``history-truncated``, ``log-cleaned-up``) and, for
each commit missing between the oldest and the newest retained one, the finding that reports
it (what ``deltaguard history`` shows in that version's row). One reading for both, so history
and the audit never disagree about a gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from deltaguard.logstore.commit_names import commit_file_name
from deltaguard.tools.deltalog.checkpoint import LOG_DIR
from deltaguard.tools.deltalog.findings import Finding
from deltaguard.tools.deltalog.listing import LogListing
from deltaguard.tools.storage.errors import FileMissingError, StorageError


@dataclass(frozen=True)
class VersionCheck:
    """``findings``: what the audit reports, in its order. ``missing``: each version without a
    commit file between the oldest and the newest listed commit, mapped to the finding about
    its run of missing versions (``version-gap``: the requested state needs it;
    ``version-gap-covered``: a later checkpoint or a compaction covers it)."""

    findings: list[Finding] = field(default_factory=list)
    missing: dict[int, Finding] = field(default_factory=dict)


def unreadable_in_place(data: bytes | StorageError) -> StorageError | None:
    """A version without a listed commit file, its ``N.json`` read once more (its bytes, or
    the error reading it): the error when something is there that cannot be read (a
    directory, a dangling symbolic link, S3 403: ``commit-unreadable``, history's
    ``unreadable``), None otherwise (not there: a gap, ``missing``). The one rule for both
    history and the audit."""
    if isinstance(data, StorageError) and not isinstance(data, FileMissingError):
        return data
    return None


def _log(name: str) -> str:
    return f"{LOG_DIR}/{name}"


def _holes(versions: list[int]) -> list[tuple[int, int]]:
    """The runs ``(start, end)`` of versions missing between the first and the last of the
    sorted ``versions``."""
    return [(a + 1, b - 1) for a, b in pairwise(versions) if b > a + 1]


def check_versions(listing: LogListing, target: int | None = None) -> VersionCheck:
    """The version findings for the state at ``target`` (default: the latest version)."""
    # here, not at the top: the snapshot module imports history, which imports this one
    from deltaguard.tools.deltalog.snapshot import _json_chain

    check = VersionCheck()
    commits = sorted(listing.commits)
    if not commits:
        return check
    first, last = commits[0], commits[-1]
    latest = listing.latest_version if target is None else target
    chain_ok = False
    missing: int | None = None
    for ref in [
        *reversed([c for c in listing.checkpoints if latest is not None and c.version <= latest]),
        None,
    ]:
        start = ref.version + 1 if ref is not None else 0
        chain = _json_chain(listing, start, latest if latest is not None else last)
        if not isinstance(chain, int):
            chain_ok = True
            break
        if missing is None:
            missing = chain  # the newest checkpoint's view: what the latest state lacks
    needed: Finding | None = None
    if not chain_ok:
        if first > 0 and not any(c.version >= first - 1 for c in listing.checkpoints):
            check.findings.append(
                Finding.of(
                    "history-truncated",
                    f"the oldest retained commit is {first} and no checkpoint covers versions "
                    f"before it",
                    _log(listing.commits[first]),
                )
            )
        else:
            needed = Finding.of(
                "version-gap",
                f"commit {missing} is missing: version {latest} cannot be reconstructed",
                _log(commit_file_name(missing or 0)),  # set: a chain that fails names its gap
            )
            check.findings.append(needed)
    for start, end in _holes(commits):
        span = f"{start}" if start == end else f"{start}-{end}"
        holds_needed = missing is not None and start <= missing <= end
        if chain_ok:  # the requested state was reconstructable, so no hole is on its path
            finding = Finding.of(
                "version-gap-covered",
                f"commits {span} are missing between retained commits (a later checkpoint or a "
                "compaction covers them)",
                _log(commit_file_name(start)),
            )
            check.findings.append(finding)
        elif holds_needed and needed is not None:
            finding = needed
        else:
            finding = Finding.of(
                "version-gap", f"commits {start}-{end} are missing", _log(commit_file_name(start))
            )
            if not holds_needed:
                check.findings.append(finding)
        check.missing.update(dict.fromkeys(range(start, end + 1), finding))
    if first > 0 and any(c.version >= first - 1 for c in listing.checkpoints):
        check.findings.append(
            Finding.of(
                "log-cleaned-up", f"commits before version {first} were removed by log cleanup"
            )
        )
    return check
