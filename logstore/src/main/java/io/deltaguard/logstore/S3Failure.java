package io.deltaguard.logstore;

/**
 * A failed S3 request, classified by what it means for a conditional create. The one
 * classification of HTTP answers ({@link #of}) serves both SDK generations.
 *
 * <ul>
 *   <li>{@link Kind#PRECONDITION_FAILED}: 412, the key exists. Caller reads it back.</li>
 *   <li>{@link Kind#CONDITIONAL_CONFLICT}: 409 ConditionalRequestConflict, a concurrent
 *       conflicting operation won; AWS says to retry.</li>
 *   <li>{@link Kind#RETRYABLE}: 5xx, 429/503 throttling, 408: the request may or may not have
 *       been applied; retry after reading back.</li>
 *   <li>{@link Kind#UNKNOWN_OUTCOME}: no HTTP answer at all (reset, timeout, lost response):
 *       the PUT may have landed; retry after reading back.</li>
 *   <li>{@link Kind#FATAL}: anything else (403, 404 bucket, 400, 501 NotImplemented): retrying
 *       cannot help.</li>
 * </ul>
 */
final class S3Failure extends Exception {
    private static final long serialVersionUID = 1L;

    enum Kind { PRECONDITION_FAILED, CONDITIONAL_CONFLICT, RETRYABLE, UNKNOWN_OUTCOME, FATAL }

    private final Kind kind;

    private S3Failure(Kind kind, String description, Throwable cause) {
        super(description, cause);
        this.kind = kind;
    }

    /** An HTTP error answer: {@code status}, S3 error {@code code} (may be null), message. */
    static S3Failure of(int status, String code, String message, Throwable cause) {
        return new S3Failure(classify(status, code),
            "HTTP " + status + " " + (code == null ? "?" : code) + ": " + message, cause);
    }

    static S3Failure of(int status, String code, String message) {
        return of(status, code, message, null);
    }

    /** No HTTP answer (reset, timeout, response lost): the request may have been applied. */
    static S3Failure noAnswer(String description, Throwable cause) {
        return new S3Failure(Kind.UNKNOWN_OUTCOME, description, cause);
    }

    static S3Failure noAnswer(String description) {
        return noAnswer(description, null);
    }

    static Kind classify(int status, String code) {
        // aws-sdk-java-v2#6023: a precondition failure can surface with status 200; trust the code.
        if (status == 412 || "PreconditionFailed".equals(code)) {
            return Kind.PRECONDITION_FAILED;
        }
        if (status == 409 || "ConditionalRequestConflict".equals(code)) {
            return Kind.CONDITIONAL_CONFLICT;
        }
        // 501 NotImplemented: the store cannot do a conditional PUT at all. Asking again gets the
        // same answer, and nothing was written.
        if (status == 501 || "NotImplemented".equals(code)) {
            return Kind.FATAL;
        }
        if (status >= 500 || status == 429 || status == 408 || "SlowDown".equals(code)
                || "RequestTimeout".equals(code)) {
            return Kind.RETRYABLE;
        }
        return Kind.FATAL;
    }

    Kind kind() {
        return kind;
    }

    /** A short description for error messages: status, error code and message. */
    String describe() {
        return getMessage();
    }
}
