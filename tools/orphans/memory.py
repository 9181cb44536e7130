"""The Arrow memory pool of a local scan.

A local scan builds its reference sets from the snapshot's file tables, which are decoded in
batches and then dropped (:mod:`.references`), so many large buffers are freed while others
live on. Arrow's default pool in the wheel (mimalloc) keeps much of that freed memory
resident; its jemalloc pool gives it back. Measured on the bench's 1M-file table
(one run, `python -m bench --only orphans`): peak RSS 355 MiB with mimalloc, 285 MiB with jemalloc, same wall time.
"""

from __future__ import annotations

import pyarrow as pa


def use_jemalloc() -> None:
    """Makes Arrow's jemalloc pool this process's default, where the pyarrow build has it
    (else nothing changes). Buffers already allocated keep their own pool."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        return
    pa.set_memory_pool(pool)
