package io.deltaguard.logstore;

import java.io.IOException;

/**
 * The S3 endpoint accepted a second create-only PUT of an existing key: it ignores
 * {@code If-None-Match: *}, so two writers could both "create" the same commit file. deltaguard
 * refuses to commit there rather than fall back to unsafe writes.
 */
public final class ConditionalWritesNotHonouredException extends IOException {
    private static final long serialVersionUID = 1L;

    public ConditionalWritesNotHonouredException(String endpoint, String bucket, String probeKey) {
        super("Refusing to commit: S3 endpoint " + endpoint + " (bucket " + bucket + ") does not "
            + "honour If-None-Match: a second create-only PUT of " + probeKey + " overwrote the "
            + "object instead of failing with 412. Concurrent Delta writers would lose commits "
            + "here. Use the DynamoDB LogStore for this store, or, only if every writer goes "
            + "through one driver, set " + LogStoreSettings.key(
                LogStoreSettings.VERIFY_CONDITIONAL_WRITES) + "=false to skip this check.");
    }
}
