package io.deltaguard.logstore;

import java.io.IOException;

/**
 * A conditional create of a commit file could not be settled: every attempt and every read-back
 * within the budget failed, so whether the commit landed is unknown. The commit may exist now,
 * or appear later if a PUT still in flight lands.
 *
 * <p>Delta fails the job on any {@link IOException}; a blind job retry would then commit the
 * same data a second time if the earlier PUT landed. The message says how to check first: read
 * the table's history ({@code deltaguard history TABLE}) and look for the commit's
 * {@code userMetadata} or {@code txn} (app id, version).
 *
 * <p>Callers that can decide (a transition store, a job wrapper) catch this type; everything
 * else sees an {@link IOException} as before.
 */
public final class CommitOutcomeUnknownException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String location;

    /**
     * @param location the commit file, {@code s3://bucket/key}
     * @param detail how many attempts ran and the last error
     */
    public CommitOutcomeUnknownException(String location, String detail) {
        super("The outcome of the commit " + location + " is unknown: " + detail + ". The commit "
            + "may have landed (or may still land). Before retrying the job, check whether it did: "
            + "`deltaguard history <table>` shows each version's userMetadata and txn (app id, "
            + "version); retry only if your commit is not there.");
        this.location = location;
    }

    /** The commit file whose outcome is unknown, {@code s3://bucket/key}. */
    public String location() {
        return location;
    }
}
