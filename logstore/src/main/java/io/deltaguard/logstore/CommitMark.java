package io.deltaguard.logstore;

import java.util.Collections;
import java.util.Map;

/**
 * The provenance mark (JVM side) on every commit object deltaguard's stores create: S3 user
 * metadata {@code x-amz-meta-deltaguard-commit: <preset>/jvm/<deltaguard version>}, sent with
 * the request that creates {@code _delta_log/N.json} (no extra request). The preset names the
 * store and its protocol. The Python twin is {@code deltaguard.logstore.commit_mark}; the format
 * is documented in docs/design/logstore.md ("Provenance mark"); {@code deltaguard history} and
 * {@code audit} read it.
 */
final class CommitMark {
    /** The user-metadata name, without S3's {@code x-amz-meta-} prefix. */
    static final String KEY = "deltaguard-commit";
    /** {@link S3ConditionalLogStore}. */
    static final String CONDITIONAL = "s3-conditional";
    /** {@code S3DynamoDBLogStore}. */
    static final String DYNAMODB = "s3-dynamodb";
    /** {@code S3TransitionLogStore}. */
    static final String TRANSITION = "s3-dynamodb-transition";

    private CommitMark() {}

    /** The mark's value for the store of {@code preset}. */
    static String value(String preset) {
        String version = CommitMark.class.getPackage() == null ? null
            : CommitMark.class.getPackage().getImplementationVersion();
        return preset + "/jvm/" + (version == null ? "dev" : version);
    }

    /** The user metadata of a commit created by the store of {@code preset}. */
    static Map<String, String> of(String preset) {
        return Collections.singletonMap(KEY, value(preset));
    }
}
