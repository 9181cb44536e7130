"""Commit metrics of deltaguard's Python stores: the counters the JVM stores report as the Spark
metrics source ``deltaguard`` (``io.deltaguard.logstore.CommitMetricsRegistry``), with the same
names, kept per store object (``store.metrics``) with no metrics library.

Each commit (a ``write`` of ``N.json`` with ``overwrite=False``) runs inside one
:meth:`CommitMetrics.observe`, which decides its outcome from how it ended (normally:
``commits``; :class:`LogFileExistsError`: ``conflicts``, lost to another writer;
:class:`CommitOutcomeUnknownError`: ``outcomes_unknown``; anything else: ``failures``) and
re-raises whatever it raised. The protocol reports into the commit's :class:`CommitTally` each
conditional request it sends (``attempts``: PUTs with ``If-None-Match``, conditional PutItems)
and each read-back that found its own bytes (``settles``). One DEBUG line per commit on this
module's logger: ``deltaguard commit store=... version=... outcome=... attempts=...
settles=... latency_ms=... location=...``. docs/guides/commit-path.md ("Metrics") lists the
names.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from deltaguard.logstore.errors import CommitOutcomeUnknownError, LogFileExistsError

LOG = logging.getLogger(__name__)


@dataclass
class CommitTally:
    """What one commit's protocol reports while it runs (one thread, the committing one)."""

    attempts: int = 0
    settles: int = 0


@dataclass(frozen=True)
class CommitCounts:
    """A consistent snapshot of :class:`CommitMetrics` (the JVM counters' names)."""

    commits: int = 0
    conflicts: int = 0
    outcomes_unknown: int = 0
    failures: int = 0
    attempts: int = 0
    settles: int = 0
    #: The sum of every observed commit's duration, whatever its outcome (the JVM's
    #: ``commit_latency`` timer keeps the distribution; divide by the outcomes' sum for a mean).
    commit_latency_seconds: float = 0.0


@dataclass
class CommitMetrics:
    """A store's running commit counters. Thread-safe; :meth:`snapshot` reads them."""

    _counts: CommitCounts = field(default_factory=CommitCounts)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def snapshot(self) -> CommitCounts:
        """The counters now."""
        with self._lock:
            return self._counts

    @contextmanager
    def observe(self, store: str, location: str, version: int) -> Iterator[CommitTally]:
        """Observes the commit run in the ``with`` block (the store ``store``'s commit of
        ``version`` at ``location``); what the block raises is re-raised unchanged."""
        tally = CommitTally()
        start = time.monotonic()
        outcome = "failed"
        try:
            yield tally
            outcome = "committed"
        except CommitOutcomeUnknownError:
            outcome = "unknown"
            raise
        except LogFileExistsError:
            outcome = "conflict"
            raise
        finally:
            seconds = time.monotonic() - start
            self._record(outcome, tally, seconds)
            LOG.debug(
                "deltaguard commit store=%s version=%d outcome=%s attempts=%d settles=%d "
                "latency_ms=%d location=%s",
                store,
                version,
                outcome,
                tally.attempts,
                tally.settles,
                int(seconds * 1000),
                location,
            )

    def _record(self, outcome: str, tally: CommitTally, seconds: float) -> None:
        with self._lock:
            c = self._counts
            self._counts = CommitCounts(
                commits=c.commits + (outcome == "committed"),
                conflicts=c.conflicts + (outcome == "conflict"),
                outcomes_unknown=c.outcomes_unknown + (outcome == "unknown"),
                failures=c.failures + (outcome == "failed"),
                attempts=c.attempts + tally.attempts,
                settles=c.settles + tally.settles,
                commit_latency_seconds=c.commit_latency_seconds + seconds,
            )
