package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

/**
 * The jar's SDK adapter: If-None-Match: * is on the wire for creates and absent for plain PUTs,
 * and each SDK's failures map to the one classification of {@link S3Failure}.
 */
class SdkS3CallsTest {
    private static final byte[] A = "a".getBytes(StandardCharsets.UTF_8);
    private static final byte[] B = "b".getBytes(StandardCharsets.UTF_8);

    @Test
    void createCarriesIfNoneMatchAndPlainPutDoesNot() throws S3Failure {
        FakeS3 s3 = new FakeS3(true);
        S3Calls calls = s3.calls();
        calls.putIfAbsent("b", "k", A, "text/plain");
        S3Failure e = assertThrows(S3Failure.class, () -> calls.putIfAbsent("b", "k", B, "text/plain"));
        assertEquals(S3Failure.Kind.PRECONDITION_FAILED, e.kind());
        assertArrayEquals(A, calls.get("b", "k").get());
        calls.put("b", "k", B, "text/plain", false);
        assertArrayEquals(B, calls.get("b", "k").get());
        calls.delete("b", "k");
        assertFalse(calls.get("b", "k").isPresent(), "a missing key is empty, not an error");
    }

    @Test
    void failuresAreClassified() {
        FakeS3 s3 = new FakeS3(true);
        S3Calls calls = s3.calls();
        s3.script.add(FakeS3.Fault.ERROR_409);
        s3.script.add(FakeS3.Fault.ERROR_503);
        s3.script.add(FakeS3.Fault.ERROR_403);
        s3.script.add(FakeS3.Fault.RESET_BEFORE);
        s3.script.add(FakeS3.Fault.DROP_RESPONSE);
        S3Failure.Kind[] expected = {S3Failure.Kind.CONDITIONAL_CONFLICT,
            S3Failure.Kind.RETRYABLE, S3Failure.Kind.FATAL, S3Failure.Kind.UNKNOWN_OUTCOME,
            S3Failure.Kind.UNKNOWN_OUTCOME};
        for (S3Failure.Kind kind : expected) {
            S3Failure e = assertThrows(S3Failure.class,
                () -> calls.putIfAbsent("b", "k", A, "text/plain"));
            assertEquals(kind, e.kind(), e.describe());
        }
        assertArrayEquals(A, s3.objects.get("k"), "the dropped response's PUT landed");
    }

    @Test
    void notImplementedIsFinalNotRetried() {
        // A store that cannot do conditional PUTs answers 501: retrying gets the same answer.
        assertEquals(S3Failure.Kind.FATAL, S3Failure.classify(501, "NotImplemented"));
        assertEquals(S3Failure.Kind.FATAL, S3Failure.classify(400, "NotImplemented"));
        assertEquals(S3Failure.Kind.RETRYABLE, S3Failure.classify(500, "InternalError"));
        assertEquals(S3Failure.Kind.RETRYABLE, S3Failure.classify(503, "SlowDown"));
    }
}
