"""Every file that any retained version of a table references.

A version is reconstructable from the oldest complete checkpoint plus the commits after it, or
from commit 0 on. So the union of (the file actions of the oldest readable checkpoint) and (the
``add``/``remove``/``cdc`` actions of every retained commit) covers every data file, deletion
vector file and change-data file that any reconstructable version can reach. Cleanup tools
must never delete one of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaguard.tools.deltalog.actions import AddFile, CdcFile, RemoveFile, parse_json_actions
from deltaguard.tools.deltalog.checkpoint import LOG_DIR, read_checkpoint
from deltaguard.tools.deltalog.errors import CorruptLogError, TableNotFoundError
from deltaguard.tools.deltalog.filetable import FileActions
from deltaguard.tools.deltalog.listing import LogListing, list_log
from deltaguard.tools.deltalog.paths import relative_to_root, relativize, root_prefixes
from deltaguard.tools.deltalog.storage import S3Options, TableStore, open_table, read_many


@dataclass
class References:
    """Decoded paths, by kind: relative to the table root, or absolute URIs for files outside
    it (an absolute path inside the root is given relative).
    ``oldest_version``: the oldest version whose state these references cover."""

    data_files: set[str] = field(default_factory=set)
    deletion_vector_files: set[str] = field(default_factory=set)
    cdc_files: set[str] = field(default_factory=set)
    oldest_version: int = 0

    def all(self) -> set[str]:
        return self.data_files | self.deletion_vector_files | self.cdc_files


def _add_dv(refs: References, action: AddFile | RemoveFile) -> None:
    dv = action.deletion_vector
    path = dv.file_path() if dv is not None else None
    if path is not None:
        refs.deletion_vector_files.add(path)  # u-type DV paths are relative already


def referenced_files(
    table: str | TableStore, *, s3: S3Options | None = None, listing: LogListing | None = None
) -> References:
    """The references of every retained version. Raises :class:`CorruptLogError` when a
    retained commit has lines that are not valid actions, or no checkpoint can be read where
    one is needed (references would be incomplete, so a cleanup must not proceed)."""
    store = open_table(table, s3) if isinstance(table, str) else table
    listing = listing or list_log(store)
    if listing.latest_version is None:
        raise TableNotFoundError(f"{store.uri} is not a Delta table: no commits in {LOG_DIR}/")
    refs = References()
    prefixes = root_prefixes(store)
    first_commit = min(listing.commits, default=0)
    refs.oldest_version = first_commit
    if first_commit > 0:
        usable = [c for c in listing.checkpoints if c.version >= first_commit - 1]
        errors = []
        for ref in usable:
            try:
                state = read_checkpoint(store, ref)
            except CorruptLogError as exc:
                errors.append(str(exc))
                continue
            refs.oldest_version = ref.version
            for kind, table_ in ((AddFile, state.adds), (RemoveFile, state.removes)):
                actions = FileActions(table_, kind)
                refs.data_files.update(relativize(table_["path"], prefixes).to_pylist())
                for _path, dv in actions.deletion_vectors():
                    if (p := dv.file_path()) is not None:
                        refs.deletion_vector_files.add(p)
            break
        else:
            raise CorruptLogError(
                f"{store.uri}: commits before {first_commit} were cleaned up and no checkpoint "
                f"covering them can be read{': ' + errors[0] if errors else ''}"
            )
    rels = [f"{LOG_DIR}/{listing.commits[v]}" for v in sorted(listing.commits)]
    for rel, data in zip(rels, read_many(store, rels), strict=True):
        parsed = parse_json_actions(data)
        if parsed.errors:
            err = parsed.errors[0]
            raise CorruptLogError(f"{store.location(rel)}:{err.line}: {err.message}", rel, err.line)
        for action in parsed.actions:
            if isinstance(action, AddFile | RemoveFile):
                refs.data_files.add(relative_to_root(action.path, prefixes) or action.path)
                _add_dv(refs, action)
            elif isinstance(action, CdcFile):
                refs.cdc_files.add(relative_to_root(action.path, prefixes) or action.path)
    return refs
