package io.deltaguard.logstore;

import java.util.Collections;
import java.util.Map;
import java.util.Optional;

/**
 * The only S3 requests deltaguard's protocol makes, one implementation per AWS SDK generation
 * ({@code SdkS3Calls} in {@code src/sdk1} and {@code src/sdk2}; each jar carries one). Every
 * decision (what is retried, what is read back, what is refused) lives in the protocol classes
 * that call this interface ({@link ConditionalCreate}, {@link ConditionalWriteVerifier},
 * {@link S3ListFrom}); an implementation only sends the request and turns the SDK's failure into
 * an {@link S3Failure} with {@link S3Failure#of(int, String, String)} or
 * {@link S3Failure#noAnswer(String)}. Implementations send each request once: the SDK's own
 * retries (S3A configures them) may repeat it, which the protocol's read-back tolerates.
 */
interface S3Calls {
    /**
     * {@code PutObject}; with {@code ifNoneMatch} it carries {@code If-None-Match: *} and stores
     * {@code body} only if the key does not exist (412 PreconditionFailed otherwise), without it
     * the last writer wins. {@code metadata}: the object's user metadata (names without
     * {@code x-amz-meta-}; empty for none), e.g. the {@link CommitMark}.
     */
    void put(String bucket, String key, byte[] body, String contentType, boolean ifNoneMatch,
             Map<String, String> metadata) throws S3Failure;

    /** {@link #put} without user metadata. */
    default void put(String bucket, String key, byte[] body, String contentType,
                     boolean ifNoneMatch) throws S3Failure {
        put(bucket, key, body, contentType, ifNoneMatch, Collections.emptyMap());
    }

    /** {@code PutObject} with {@code If-None-Match: *}, no user metadata. */
    default void putIfAbsent(String bucket, String key, byte[] body, String contentType)
            throws S3Failure {
        put(bucket, key, body, contentType, true, Collections.emptyMap());
    }

    /** {@code PutObject} with {@code If-None-Match: *} and the user metadata {@code metadata}. */
    default void putIfAbsent(String bucket, String key, byte[] body, String contentType,
                             Map<String, String> metadata) throws S3Failure {
        put(bucket, key, body, contentType, true, metadata);
    }

    /** The object's bytes, or empty if the key does not exist (404 NoSuchKey). */
    Optional<byte[]> get(String bucket, String key) throws S3Failure;

    void delete(String bucket, String key) throws S3Failure;

    /**
     * One ListObjectsV2 page of {@code prefix}, rolled up at {@code delimiter} (may be null),
     * starting after {@code startAfter} or continuing {@code continuationToken} (either may be
     * null), at most {@code maxKeys} entries (0: the server's default).
     */
    S3ListPage list(String bucket, String prefix, String delimiter, String startAfter,
                    String continuationToken, int maxKeys) throws S3Failure;
}
