package io.deltaguard.logstore;

import java.io.IOException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A conditional create of a commit file could not be settled: every attempt and every read-back
 * within the budget failed, so whether the commit landed is unknown. The commit may exist now,
 * or appear later if a PUT still in flight lands. Thrown by the settle logic of
 * {@link ConditionalCreate} (see {@link S3ConditionalLogStore}, "What happens on each failure")
 * and by the DynamoDB store's commit point ({@code DynamoDBCommitTable#commit}).
 *
 * <p>Delta fails the job on any {@link IOException}; a blind job retry would then commit the
 * same data a second time if the earlier PUT landed. The message says how to check first: the
 * commit can only ever be version N of its table (every attempt targets the same key, and a
 * conditional create never replaces another writer's N.json), so {@code deltaguard history
 * TABLE} shows whether version N carries the commit's {@code userMetadata} or {@code txn}
 * (app id, version). The same message is built by Python's {@code CommitOutcomeUnknownError}
 * ({@code logstore/python/errors.py}).
 *
 * <p>Callers that can decide (a transition store, a job wrapper) catch this type; everything
 * else sees an {@link IOException} as before.
 */
public final class CommitOutcomeUnknownException extends IOException {
    private static final long serialVersionUID = 1L;
    private static final Pattern COMMIT_FILE = Pattern.compile("^(.*)/_delta_log/(\\d{20})\\.json$");

    private final String location;

    /**
     * @param location the commit file, {@code s3://bucket/key}
     * @param detail how many attempts ran and the last error
     */
    public CommitOutcomeUnknownException(String location, String detail) {
        this(location, detail, null);
    }

    /**
     * @param location the commit file, {@code s3://bucket/key}
     * @param detail how many attempts ran and the last error
     * @param cause the last failure, or null
     */
    public CommitOutcomeUnknownException(String location, String detail, Throwable cause) {
        super(message(location, detail), cause);
        this.location = location;
    }

    /** The commit file whose outcome is unknown, {@code s3://bucket/key}. */
    public String location() {
        return location;
    }

    /**
     * The message: what is unknown, why, and how to check before retrying: for a commit file
     * ({@code TABLE/_delta_log/N.json}) the table and the version to look at; for any other key
     * only that the object may exist. Python's {@code outcome_unknown_message} builds the same.
     */
    static String message(String location, String detail) {
        Matcher m = COMMIT_FILE.matcher(location);
        if (!m.matches()) {
            return "The outcome of the conditional create of " + location + " is unknown: "
                + detail + ". The object may exist now, or appear later while a request is in "
                + "flight.";
        }
        String table = m.group(1);
        long version = Long.parseLong(m.group(2));
        return "The outcome of the commit " + location + " is unknown: " + detail + ". The commit "
            + "may have landed, or may still land while a request is in flight. It can only ever "
            + "be version " + version + " of " + table + ". Before retrying the job, check: "
            + "`deltaguard history " + table + "` shows each version's userMetadata and txn (app "
            + "id, version). If version " + version + " carries your commit's userMetadata or "
            + "txn, it landed: do not retry. If version " + version + " is another writer's "
            + "commit, yours did not land and never will: retry. If there is no version "
            + version + " yet, check again in a minute.";
    }
}
