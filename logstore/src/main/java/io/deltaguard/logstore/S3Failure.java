package io.deltaguard.logstore;

import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * What a failed S3 request means for a conditional create.
 *
 * <ul>
 *   <li>{@link Kind#PRECONDITION_FAILED}: 412, the key exists. Caller reads it back.</li>
 *   <li>{@link Kind#CONDITIONAL_CONFLICT}: 409 ConditionalRequestConflict, a concurrent
 *       conflicting operation won; AWS says to retry.</li>
 *   <li>{@link Kind#RETRYABLE}: 5xx, 429/503 throttling, 408: the request may or may not have
 *       been applied; retry after reading back.</li>
 *   <li>{@link Kind#UNKNOWN_OUTCOME}: no HTTP answer at all (reset, timeout, lost response):
 *       the PUT may have landed; retry after reading back.</li>
 *   <li>{@link Kind#FATAL}: anything else (403, 404 bucket, 400): retrying cannot help.</li>
 * </ul>
 */
final class S3Failure {
    enum Kind { PRECONDITION_FAILED, CONDITIONAL_CONFLICT, RETRYABLE, UNKNOWN_OUTCOME, FATAL }

    private S3Failure() {}

    static Kind classify(SdkException e) {
        if (e instanceof S3Exception s3) {
            String code = s3.awsErrorDetails() == null ? null : s3.awsErrorDetails().errorCode();
            int status = s3.statusCode();
            // aws-sdk-java-v2#6023: a precondition failure can surface with status 200; trust the code.
            if (status == 412 || "PreconditionFailed".equals(code)) {
                return Kind.PRECONDITION_FAILED;
            }
            if (status == 409 || "ConditionalRequestConflict".equals(code)) {
                return Kind.CONDITIONAL_CONFLICT;
            }
            if (status >= 500 || status == 429 || status == 408 || "SlowDown".equals(code)
                    || "RequestTimeout".equals(code)) {
                return Kind.RETRYABLE;
            }
            return Kind.FATAL;
        }
        if (e instanceof SdkClientException) {
            return Kind.UNKNOWN_OUTCOME;
        }
        return Kind.FATAL;
    }

    /** A short description for error messages: status, error code and message. */
    static String describe(SdkException e) {
        if (e instanceof S3Exception s3) {
            String code = s3.awsErrorDetails() == null ? "?" : s3.awsErrorDetails().errorCode();
            return "HTTP " + s3.statusCode() + " " + code + ": " + s3.getMessage();
        }
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
}
