"""The rolling migration from DynamoDB to conditional writes under continuous writes (Spark
driver, Python committers, delta-rs from phase 2, SIGKILLs at each crash point of the transition
store), and the negative control that shows why the phases exist. The long variant runs in
`make soak` (python -m deltaguard.localstack.migration --long)."""

from __future__ import annotations

import pytest

from deltaguard.localstack.migration import (
    MigrationConfig,
    run_negative_control,
    run_rolling_migration,
)


@pytest.mark.slow
def test_negative_control_plain_dynamodb_next_to_conditional_loses_commits(
    ls_proxy, ls_bucket, ls_commit_table
):
    plain = run_negative_control(ls_proxy, ls_bucket, ls_commit_table, rounds=3)
    print(plain.line())
    assert plain.lost == 3, plain.line()
    transition = run_negative_control(
        ls_proxy, ls_bucket, ls_commit_table, rounds=3, transition=True
    )
    print(transition.line())
    assert transition.lost == 0 and transition.both_claimed_one_version == 0, transition.line()


# proves: README and docs/guides/migration.md "the transition store moves a live table without
# stopping a writer; 0 lost, 0 duplicated"
@pytest.mark.spark
def test_rolling_migration_under_continuous_writes(
    localstack, ls_proxy, ls_bucket, ls_commit_table, tmp_path
):
    result = run_rolling_migration(
        localstack.endpoint, ls_proxy, ls_bucket, ls_commit_table, tmp_path, MigrationConfig()
    )
    line = result.summary_line()
    print(line)
    assert result.lost == [] and result.duplicated == [] and result.failed == [], line
    assert result.versions == list(range(len(result.versions))), line
    assert result.audit_errors == [], result.audit_codes
    assert "mixed-commit-protocols" not in result.audit_codes
    phases = {name: (s["phase"], s["unsafe"]) for name, s in result.statuses.items()}
    assert phases == {
        "0-dynamodb": ("dynamodb", False),
        "1-in-progress": ("transition", False),
        "1-done": ("transition", False),
        "2-mixed": ("transition", False),
        "3-conditional": ("conditional", False),
    }, result.statuses
    assert result.statuses["1-in-progress"]["next"].startswith("Phase 1 in progress")
    assert result.statuses["1-done"]["next"].startswith("Phase 1 is done")
    assert result.statuses["2-mixed"]["next"].startswith("Phase 2")
    assert len(result.kills) == 5
