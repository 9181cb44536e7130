package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Create-if-absent of one S3 object with {@code PutObject} + {@code If-None-Match: *}, made safe
 * against lost responses and transient failures.
 *
 * <p><b>Contract.</b> {@link #create} returns normally iff the object now holds exactly our
 * bytes and no other writer's bytes were ever stored under the key by this call. It throws
 * {@link FileAlreadyExistsException} iff the key holds different bytes (another writer won). It
 * throws {@link CommitOutcomeUnknownException} naming the key and the last error when the outcome
 * could not be settled: the attempt budget ended with nothing readable under the key (a 412
 * included), a read-back kept failing, or a non-retryable error followed an attempt whose outcome
 * was not settled (that earlier PUT may still land). It throws a plain {@link IOException} on a
 * non-retryable error of the first PUT (403, missing bucket, ...), which S3 applied to nothing.
 *
 * <p><b>Why a lost response never becomes a duplicate commit.</b> Every failed or unanswered
 * attempt (412, 409, 5xx, throttling, reset, timeout) is followed by a read-back of the key
 * before anything else happens. If the stored bytes equal ours, an earlier attempt of ours landed
 * and only its response was lost: that is success, so Delta never retries the same actions at
 * version N+1. This relies on commit bytes being unique per transaction, which holds for Delta
 * (every commit carries a random {@code txnId} and a timestamp in {@code commitInfo}, and added
 * files have random names).
 *
 * <p><b>Retries.</b> Only the outcomes that may change on retry are retried (409, 5xx, 429, 408,
 * no response), at most {@code maxAttempts} PUTs in total, with jittered exponential backoff.
 * Every retry is again conditional, so no retry can overwrite another writer's object.
 */
final class ConditionalCreate {
    private static final Logger LOG = LoggerFactory.getLogger(ConditionalCreate.class);

    private final S3Calls s3;
    private final int maxAttempts;
    private final Backoff backoff;
    private final Map<String, String> metadata;
    private final CommitMetrics.Tally tally;

    ConditionalCreate(S3Calls s3, int maxAttempts, Backoff backoff) {
        this(s3, maxAttempts, backoff, Collections.emptyMap(), new CommitMetrics.Tally());
    }

    private ConditionalCreate(S3Calls s3, int maxAttempts, Backoff backoff,
                              Map<String, String> metadata, CommitMetrics.Tally tally) {
        this.s3 = s3;
        this.maxAttempts = maxAttempts;
        this.backoff = backoff;
        this.metadata = metadata;
        this.tally = tally;
    }

    /**
     * The same create whose every PUT carries the user metadata {@code metadata} (a store's
     * {@link CommitMark}); reads are unchanged.
     */
    ConditionalCreate marking(Map<String, String> metadata) {
        return new ConditionalCreate(s3, maxAttempts, backoff, metadata, tally);
    }

    /**
     * The same create reporting its PUTs and its settles (a read-back that found our bytes) to
     * {@code tally}, a commit's {@link CommitMetrics.Tally}.
     */
    ConditionalCreate tallying(CommitMetrics.Tally tally) {
        return new ConditionalCreate(s3, maxAttempts, backoff, metadata, tally);
    }

    int maxAttempts() {
        return maxAttempts;
    }

    /** The same create on the same client and backoff, with {@code attempts} PUTs at most. */
    ConditionalCreate withMaxAttempts(int attempts) {
        return new ConditionalCreate(s3, attempts, backoff, metadata, tally);
    }

    Backoff backoff() {
        return backoff;
    }

    void create(String bucket, String key, byte[] body) throws IOException {
        String where = "s3://" + bucket + "/" + key;
        String lastError = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            if (attempt > 1) {
                backoff.sleepBefore(attempt - 1);
            }
            S3Failure.Kind kind;
            try {
                tally.attempt();
                s3.putIfAbsent(bucket, key, body, "application/json", metadata);
                return;
            } catch (S3Failure e) {
                kind = e.kind();
                lastError = e.describe();
                if (kind == S3Failure.Kind.FATAL && attempt == 1) {
                    throw new IOException(
                        "Conditional create of " + where + " failed and cannot be retried: "
                            + lastError, e);
                }
                if (kind == S3Failure.Kind.FATAL) {
                    // An earlier attempt had no definite answer and may still land.
                    throw new CommitOutcomeUnknownException(where, "attempt " + attempt + "/"
                        + maxAttempts + " failed and cannot be retried (" + lastError + ") after "
                        + "an earlier attempt whose outcome was not settled");
                }
                LOG.info("Conditional create of {} attempt {}/{}: {} ({})",
                    where, attempt, maxAttempts, kind, lastError);
            }
            // 412, 409, 5xx or no answer: settle what is stored before deciding anything.
            Optional<byte[]> stored = readBack(bucket, key, where, attempt, lastError);
            if (stored.isPresent()) {
                if (Arrays.equals(stored.get(), body)) {
                    LOG.info("{} already holds our bytes: an earlier attempt landed, its response "
                        + "was lost; treating the create as done", where);
                    tally.settle();
                    return;
                }
                throw new FileAlreadyExistsException(where, null,
                    "another writer created it first (" + lastError + ")");
            }
            if (kind == S3Failure.Kind.PRECONDITION_FAILED) {
                // 412 yet nothing readable: a concurrent create is not visible yet, or was deleted.
                lastError = lastError + "; and the object was not readable afterwards";
            }
        }
        throw new CommitOutcomeUnknownException(where, "the conditional create did not settle "
            + "after " + maxAttempts + " attempts; last error: " + lastError
            + " (raise " + LogStoreSettings.key(LogStoreSettings.MAX_ATTEMPTS) + " if the store "
            + "is merely slow)");
    }

    /**
     * The settle step's read-back after failed attempt {@code attempt}: {@link #read}, whose
     * failure leaves the outcome unknown, since the PUT may have landed whatever the GET says.
     */
    private Optional<byte[]> readBack(String bucket, String key, String where, int attempt,
                                      String putError) throws CommitOutcomeUnknownException {
        try {
            return read(bucket, key, "read back " + where);
        } catch (IOException e) {
            throw new CommitOutcomeUnknownException(where, "attempt " + attempt + "/" + maxAttempts
                + " of the conditional create failed (" + putError + ") and the read-back to "
                + "settle it failed: " + e.getMessage(), e);
        }
    }

    /**
     * Reads the object; empty if it does not exist. Transient read failures are retried with
     * the same budget, since a wrong answer in a read-back could turn success into a duplicate.
     * The LogStores' plain reads of log files use it too ({@link S3LogFiles#read}).
     *
     * @param purpose what the read is for, completing "Could not ..." in the error message
     */
    Optional<byte[]> read(String bucket, String key, String purpose) throws IOException {
        String lastError = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            if (attempt > 1) {
                backoff.sleepBefore(attempt - 1);
            }
            try {
                return s3.get(bucket, key);
            } catch (S3Failure e) {
                lastError = e.describe();
                if (e.kind() == S3Failure.Kind.FATAL) {
                    break;
                }
            }
        }
        throw new IOException("Could not " + purpose + "; last error: " + lastError);
    }
}
