package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

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
    static void ensureVerified(S3Client s3, String endpoint, String bucket, String logDirKey)
            throws IOException {
        String cacheKey = endpoint + "|" + bucket;
        if (VERIFIED.containsKey(cacheKey)) {
            return;
        }
        synchronized (ConditionalWriteVerifier.class) {
            if (VERIFIED.containsKey(cacheKey)) {
                return;
            }
            verify(s3, endpoint, bucket, logDirKey + "/.deltaguard-probe." + UUID.randomUUID() + ".tmp");
            VERIFIED.put(cacheKey, Boolean.TRUE);
            LOG.info("Endpoint {} honours If-None-Match for bucket {}", endpoint, bucket);
        }
    }

    /** Forgets every verification (tests only). */
    static void resetForTests() {
        VERIFIED.clear();
    }

    private static void verify(S3Client s3, String endpoint, String bucket, String key)
            throws IOException {
        byte[] first = ("deltaguard probe 1 " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
        byte[] second = ("deltaguard probe 2 " + UUID.randomUUID()).getBytes(StandardCharsets.UTF_8);
        String where = "s3://" + bucket + "/" + key;
        try {
            put(s3, bucket, key, first);
        } catch (SdkException e) {
            throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                + ": the first probe PUT of " + where + " failed: " + S3Failure.describe(e), e);
        }
        try {
            boolean overwritten;
            try {
                put(s3, bucket, key, second);
                overwritten = true;
            } catch (SdkException e) {
                if (S3Failure.classify(e) != S3Failure.Kind.PRECONDITION_FAILED) {
                    throw new IOException("Could not verify conditional writes on endpoint "
                        + endpoint + ": the second probe PUT of " + where + " failed with "
                        + S3Failure.describe(e) + " instead of 412 PreconditionFailed", e);
                }
                overwritten = false;
            }
            byte[] stored = s3.getObjectAsBytes(
                GetObjectRequest.builder().bucket(bucket).key(key).build()).asByteArray();
            if (overwritten || !Arrays.equals(stored, first)) {
                throw new ConditionalWritesNotHonouredException(endpoint, bucket, where);
            }
        } catch (SdkException e) {
            throw new IOException("Could not verify conditional writes on endpoint " + endpoint
                + ": reading back " + where + " failed: " + S3Failure.describe(e), e);
        } finally {
            try {
                s3.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(key).build());
            } catch (SdkException e) {
                LOG.warn("Could not delete probe object {}: {}", where, S3Failure.describe(e));
            }
        }
    }

    private static void put(S3Client s3, String bucket, String key, byte[] body) {
        s3.putObject(
            PutObjectRequest.builder().bucket(bucket).key(key).ifNoneMatch("*")
                .contentLength((long) body.length).build(),
            RequestBody.fromBytes(body));
    }
}
