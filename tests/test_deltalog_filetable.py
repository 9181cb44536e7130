"""``filetable.from_struct``: a checkpoint's ``add``/``remove`` struct as a FILE_SCHEMA table.
Columns without a value (no deletion vectors, an add's deletion time) share one buffer of
nulls across batches instead of holding their own, and read exactly as before."""

from __future__ import annotations

import pyarrow as pa

from deltaguard.localstack.synthetic_table import ADD
from deltaguard.tools.deltalog import filetable


def _adds(rows: list[dict[str, object] | None]) -> pa.Array:
    return pa.array(rows, ADD)  # the test bed's checkpoint layout of an add


def _add(path: str, dv: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "path": path,
        "size": 10,
        "modificationTime": 5,
        "dataChange": True,
        "deletionVector": dv,
    }


def test_columns_without_values_share_one_buffer_and_read_as_nulls() -> None:
    first = filetable.from_struct(_adds([_add(f"a{i}") for i in range(1000)] + [None]))
    second = filetable.from_struct(_adds([_add(f"b{i}") for i in range(500)]))
    assert first.num_rows == 1000 and second.num_rows == 500  # the null row is not an action
    for name in ("deletion_timestamp", "dv_storage_type", "dv_offset", "dv_unique_id"):
        a, b = first[name].chunk(0), second[name].chunk(0)
        assert a.null_count == len(a) and b.null_count == len(b)
        assert a.buffers()[-1].address == b.buffers()[-1].address, name  # one shared buffer
    assert first["path"].to_pylist()[:2] == ["a0", "a1"]
    assert set(first["size"].to_pylist()) == {10}


def test_a_batch_with_deletion_vectors_keeps_them_exactly() -> None:
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4}
    dv |= {"sizeInBytes": 40, "cardinality": 6}
    table = filetable.from_struct(_adds([_add("x"), _add("y", dv), _add("z")]))
    assert table["dv_storage_type"].to_pylist() == [None, "u", None]
    assert table["dv_offset"].to_pylist() == [None, 4, None]
    assert table["dv_cardinality"].to_pylist() == [None, 6, None]
    assert table["dv_unique_id"].to_pylist() == [None, "uab^-aqEH.-t@S}K{vb[*k^@4", None]
    assert table["deletion_timestamp"].to_pylist() == [None, None, None]
    assert filetable.keys(table).to_pylist() == ["x", "y\x00uab^-aqEH.-t@S}K{vb[*k^@4", "z"]
