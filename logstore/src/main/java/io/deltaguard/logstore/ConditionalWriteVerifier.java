package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fail-closed check that an endpoint really honours {@code If-None-Match: *}, once per JVM and
 * (endpoint, bucket).
 *
 * <p>The check writes a fresh probe object under the table's {@code _delta_log/} with
 * If-None-Match, then a second, different body to the same key with If-None-Match. A store that
 * honours conditional writes answers the second PUT with 412 and still holds the first body. A
 * store that answers 200 (it ignored the header and overwrote) or holds the second body is
 * refused: committing there would silently lose commits. The probe object is deleted afterwards
 * (its name, {@code .deltaguard-probe.<uuid>.tmp}, is ignored by Delta's log listing).
 *
 * <p>Only a successful verification is cached; a failed or refused one is retried by the next
 * commit, so a transient error does not poison the JVM.
 */
final class ConditionalWriteVerifier {
    private static final Logger LOG = LoggerFactory.getLogger(ConditionalWriteVerifier.class);
    private static final ConcurrentHashMap<String, Boolean> VERIFIED = new ConcurrentHashMap<>();

    private ConditionalWriteVerifier() {}

    /**
     * Ensures the (endpoint, bucket) pair was verified in this JVM.
     *
     * @param logDirKey the key of the {@code _delta_log} directory (no trailing slash) under
     *     which the probe object is written
     * @throws ConditionalWritesNotHonouredException if the store overwrote the probe
     * @throws IOException if the probe could not be carried out
     */
    static void ensureVerified(S3Calls s3, String endpoint, String bucket, String logDirKey,
                               ConditionalCreate create) throws IOException {
        String cacheKey = endpoint + "|" + bucket;
        if (VERIFIED.containsKey(cacheKey)) {
            return;
        }
        synchronized (ConditionalWriteVerifier.class) {
            if (VERIFIED.containsKey(cacheKey)) {
                return;
            }
            verify(s3, endpoint, bucket,
                logDirKey + "/.deltaguard-probe." + UUID.randomUUID() + ".tmp", create);
            VERIFIED.put(cacheKey, Boolean.TRUE);
            LOG.info("Endpoint {} honours If-None-Match for bucket {}", endpoint, bucket);
        }
    }

    /** Forgets every verification (tests only). */
    static void resetForTests() {
        VERIFIED.clear();
    }

    private static void verify(S3Calls s3, String endpoint, String bucket, String key,
                               ConditionalCreate create) throws IOException {
        byte[] first = ("deltaguard probe 1 " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
        String where = "s3://" + bucket + "/" + key;
        try {
            // The first probe PUT is an ordinary conditional create: lost responses and
            // transient errors are settled exactly as for a commit.
            create.create(bucket, key, first);
            boolean overwritten = secondPutOverwrote(s3, endpoint, bucket, key, where, create);
            Optional<byte[]> stored = s3.get(bucket, key);
            if (!stored.isPresent()) {
                throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                    + ": the probe object " + where + " vanished after it was written");
            }
            if (overwritten || !Arrays.equals(stored.get(), first)) {
                throw new ConditionalWritesNotHonouredException(endpoint, bucket, where);
            }
        } catch (CommitOutcomeUnknownException e) {
            // The probe key is no commit: no commit was attempted, so this is no unknown outcome
            // of one (a caller catching that type must not take it for one).
            throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                + ": the create of the probe object " + where + " did not settle", e);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                + ": the fresh probe key " + where + " already held other bytes", e);
        } catch (S3Failure e) {
            throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                + ": reading back " + where + " failed: " + e.describe(), e);
        } finally {
            try {
                s3.delete(bucket, key);
            } catch (S3Failure e) {
                LOG.warn("Could not delete probe object {}: {}", where, e.describe());
            }
        }
    }

    /** True if a second create-only PUT of an existing key succeeded; retries transient errors. */
    private static boolean secondPutOverwrote(S3Calls s3, String endpoint, String bucket,
                                              String key, String where, ConditionalCreate create)
            throws IOException {
        String lastError = null;
        for (int attempt = 1; attempt <= create.maxAttempts(); attempt++) {
            if (attempt > 1) {
                create.backoff().sleepBefore(attempt - 1);
            }
            try {
                s3.putIfAbsent(bucket, key, ("deltaguard probe 2 " + UUID.randomUUID())
                    .getBytes(StandardCharsets.UTF_8), "text/plain");
                return true;
            } catch (S3Failure e) {
                if (e.kind() == S3Failure.Kind.PRECONDITION_FAILED) {
                    return false;
                }
                lastError = e.describe();
                if (e.kind() == S3Failure.Kind.FATAL) {
                    break;
                }
            }
        }
        throw new IOException("Could not verify conditional writes on endpoint " + endpoint
            + ": the second probe PUT of " + where + " failed with " + lastError
            + " instead of 412 PreconditionFailed");
    }
}
