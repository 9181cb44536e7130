package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ConditionalWriteVerifierTest {
    @BeforeEach
    void reset() {
        ConditionalWriteVerifier.resetForTests();
    }

    private static ConditionalCreate create(FakeS3 s3) {
        return new ConditionalCreate(s3.calls(), 4, new Backoff(1, 2));
    }

    @Test
    void probeSurvivesLostResponseAndThrottling() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.DROP_RESPONSE); // first probe PUT lands, answer lost
        s3.script.add(FakeS3.Fault.ERROR_503);     // second probe PUT throttled once
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3.calls(), "http://e", "b", "t/_delta_log", create(s3)));
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
    }

    @Test
    void honouringStorePassesOnceAndLeavesNoProbe() {
        FakeS3 s3 = new FakeS3(true);
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3.calls(), "http://e", "b", "t/_delta_log", create(s3)));
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
        int puts = s3.puts;
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3.calls(), "http://e", "b", "t/_delta_log", create(s3)));
        assertEquals(puts, s3.puts, "cached per endpoint and bucket");
    }

    @Test
    void storeIgnoringIfNoneMatchIsRefusedWithSettingName() {
        FakeS3 s3 = new FakeS3(false);
        ConditionalWritesNotHonouredException e = assertThrows(
            ConditionalWritesNotHonouredException.class,
            () -> ConditionalWriteVerifier.ensureVerified(s3.calls(), "http://bad:9000", "b", "t/_delta_log", create(s3)));
        assertTrue(e.getMessage().contains("http://bad:9000"), e.getMessage());
        assertTrue(e.getMessage().contains("deltaguard.logstore.verifyConditionalWrites"), e.getMessage());
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
        // not cached: the next commit checks again
        assertThrows(ConditionalWritesNotHonouredException.class,
            () -> ConditionalWriteVerifier.ensureVerified(s3.calls(), "http://bad:9000", "b", "t/_delta_log", create(s3)));
    }
}
