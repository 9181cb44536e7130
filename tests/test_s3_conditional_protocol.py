"""The conditional-write commit protocol's decisions, pinned down on the in-memory ScriptedS3
(milliseconds, no server): the Python twin of the JUnit ConditionalCreateTest. The same
scenarios run end to end against LocalStack in test_python_logstore.py."""

from __future__ import annotations

import pytest
from scripted_s3 import Fault, ScriptedS3

from deltaguard.logstore.errors import (
    CommitOutcomeUnknownError,
    ConditionalWritesNotHonouredError,
    LogFileExistsError,
)
from deltaguard.logstore.s3_conditional import S3ConditionalLogStore, forget_verifications

URI = "s3://bucket/table/_delta_log/00000000000000000001.json"
KEY = ("bucket", "table/_delta_log/00000000000000000001.json")


def _store(s3: ScriptedS3, **kwargs: object) -> S3ConditionalLogStore:
    forget_verifications()
    return S3ConditionalLogStore(s3, base_delay_s=0.0, max_delay_s=0.0, **kwargs)  # type: ignore[arg-type]


def test_create_writes_lines_with_newlines():
    s3 = ScriptedS3()
    _store(s3).write(URI, ['{"a":1}', '{"b":2}'])
    assert s3.objects[KEY] == b'{"a":1}\n{"b":2}\n'


def test_existing_file_is_log_file_exists_and_left_alone():
    s3 = ScriptedS3()
    s3.objects[KEY] = b"theirs\n"
    with pytest.raises(LogFileExistsError):
        _store(s3).write(URI, ["ours"])
    assert s3.objects[KEY] == b"theirs\n"


# proves: docs/guides/commit-path.md and docs/guides/streaming.md "a lost response is settled by
# reading it back, never a duplicate"
def test_lost_response_settles_by_read_back_without_a_second_put():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False)
    s3.fail_next_puts(Fault.DROP_RESPONSE)
    store.write(URI, ["ours"])
    assert s3.objects[KEY] == b"ours\n"
    assert s3.puts == 1, "the read-back found our bytes: no retry"


@pytest.mark.parametrize("fault", [Fault.ERROR_503, Fault.ERROR_409, Fault.RESET_BEFORE])
def test_transient_failure_with_nothing_stored_is_retried(fault):
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False)
    s3.fail_next_puts(fault, fault)
    store.write(URI, ["ours"])
    assert s3.objects[KEY] == b"ours\n"
    assert s3.puts == 3


def test_409_when_another_writer_won_is_log_file_exists():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False)
    s3.objects[KEY] = b"theirs\n"
    s3.fail_next_puts(Fault.ERROR_409)
    with pytest.raises(LogFileExistsError):
        store.write(URI, ["ours"])
    assert s3.objects[KEY] == b"theirs\n"


def test_403_is_not_retried():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False)
    s3.fail_next_puts(Fault.ERROR_403)
    with pytest.raises(OSError, match="cannot be retried") as err:
        store.write(URI, ["ours"])
    assert not isinstance(err.value, CommitOutcomeUnknownError)  # nothing was written
    assert s3.puts == 1 and KEY not in s3.objects


def test_403_after_an_unsettled_attempt_is_outcome_unknown():
    """The first PUT's 503 may still land: a later 403 does not settle anything."""
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False, max_attempts=5)
    s3.fail_next_puts(Fault.ERROR_503, Fault.ERROR_403)
    with pytest.raises(CommitOutcomeUnknownError, match="AccessDenied") as err:
        store.write(URI, ["ours"])
    assert s3.puts == 2
    _assert_how_to_check(err.value)


def _assert_how_to_check(error: CommitOutcomeUnknownError) -> None:
    """The message says the commit may have landed, where and how to look (issue 21 item 6),
    as the JVM's CommitOutcomeUnknownException does."""
    message = str(error)
    assert error.location == URI and URI in message
    assert "may have landed" in message
    assert "version 1 of s3://bucket/table" in message
    assert "`deltaguard history s3://bucket/table`" in message
    assert "userMetadata" in message and "txn" in message


def test_attempt_budget_ends_in_outcome_unknown():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False, max_attempts=3)
    s3.fail_next_puts(*[Fault.ERROR_503] * 3)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        store.write(URI, ["ours"])
    assert s3.puts == 3
    assert "SlowDown" in str(err.value)
    _assert_how_to_check(err.value)


def test_412_with_nothing_readable_ends_in_outcome_unknown():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False, max_attempts=3)
    s3.fail_next_puts(*[Fault.ERROR_412] * 3)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        store.write(URI, ["ours"])
    assert "PreconditionFailed" in str(err.value)
    assert "not readable afterwards" in str(err.value)
    _assert_how_to_check(err.value)
    assert s3.puts == 3, "each 412 with nothing stored is retried, conditionally"
    assert s3.gets == 3, "each attempt is settled by a read-back"
    assert KEY not in s3.objects


def test_read_back_that_keeps_failing_is_outcome_unknown():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False, max_attempts=3)
    s3.fail_next_puts(Fault.ERROR_503)
    s3.fail_next_gets(*[Fault.ERROR_503] * 3)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        store.write(URI, ["ours"])
    assert "read-back" in str(err.value)
    _assert_how_to_check(err.value)
    assert s3.puts == 1, "no PUT before the earlier one is settled"
    assert s3.gets == 3, "the read-back has the same budget"


# proves: docs/guides/commit-path.md "no conditional create replaces another writer's; an unknown
# outcome can only be version N"
def test_landed_put_whose_every_response_is_lost_is_outcome_unknown_and_holds_our_bytes():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False, max_attempts=3)
    s3.fail_next_puts(Fault.DROP_RESPONSE)
    s3.fail_next_gets(*[Fault.DROP_RESPONSE] * 3)
    with pytest.raises(CommitOutcomeUnknownError) as err:
        store.write(URI, ["ours"])
    _assert_how_to_check(err.value)
    assert s3.objects[KEY] == b"ours\n", "the commit did land: unknown, not failed"
    assert s3.puts == 1


# proves: docs/guides/commit-path.md "a store that ignores If-None-Match is refused before any
# commit"
def test_store_ignoring_if_none_match_fails_closed_before_any_commit():
    s3 = ScriptedS3(honour_if_none_match=False)
    with pytest.raises(ConditionalWritesNotHonouredError):
        _store(s3).write(URI, ["ours"])
    assert KEY not in s3.objects
    assert not s3.objects, "the probe object was deleted"


def test_verification_runs_once_per_endpoint_and_bucket():
    s3 = ScriptedS3()
    store = _store(s3)
    store.write(URI, ["one"])
    puts = s3.puts
    store.write(URI.replace("1.json", "2.json"), ["two"])
    assert s3.puts == puts + 1


def test_overwrite_is_a_plain_put():
    s3 = ScriptedS3(honour_if_none_match=False)
    store = _store(s3)
    store.write(URI, ["a"], overwrite=True)
    store.write(URI, ["b"], overwrite=True)
    assert s3.objects[KEY] == b"b\n"


def test_list_from_and_read_round_trip():
    s3 = ScriptedS3()
    store = _store(s3, verify_conditional_writes=False)
    for v in range(3):
        store.write(URI.replace("1.json", f"{v}.json"), [f"v{v}"])
    names = [s.name for s in store.list_from(URI)]
    assert names == ["00000000000000000001.json", "00000000000000000002.json"]
    assert list(store.read(URI)) == ["v1"]
