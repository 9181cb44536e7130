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

    private static ConditionalCreate create(ScriptedS3Client s3) {
        return new ConditionalCreate(s3, 4, new Backoff(1, 2));
    }

    @Test
    void probeSurvivesLostResponseAndThrottling() {
        ScriptedS3Client s3 = new ScriptedS3Client(true);
        s3.script.add(ScriptedS3Client.Fault.DROP_RESPONSE); // first probe PUT lands, answer lost
        s3.script.add(ScriptedS3Client.Fault.ERROR_503);     // second probe PUT throttled once
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3, "http://e", "b", "t/_delta_log", create(s3)));
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
    }

    @Test
    void honouringStorePassesOnceAndLeavesNoProbe() {
        ScriptedS3Client s3 = new ScriptedS3Client(true);
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3, "http://e", "b", "t/_delta_log", create(s3)));
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
        int puts = s3.puts;
        assertDoesNotThrow(() -> ConditionalWriteVerifier.ensureVerified(s3, "http://e", "b", "t/_delta_log", create(s3)));
        assertEquals(puts, s3.puts, "cached per endpoint and bucket");
    }

    @Test
    void storeIgnoringIfNoneMatchIsRefusedWithSettingName() {
        ScriptedS3Client s3 = new ScriptedS3Client(false);
        ConditionalWritesNotHonouredException e = assertThrows(
            ConditionalWritesNotHonouredException.class,
            () -> ConditionalWriteVerifier.ensureVerified(s3, "http://bad:9000", "b", "t/_delta_log", create(s3)));
        assertTrue(e.getMessage().contains("http://bad:9000"), e.getMessage());
        assertTrue(e.getMessage().contains("deltaguard.logstore.verifyConditionalWrites"), e.getMessage());
        assertTrue(s3.objects.isEmpty(), "probe object deleted");
        // not cached: the next commit checks again
        assertThrows(ConditionalWritesNotHonouredException.class,
            () -> ConditionalWriteVerifier.ensureVerified(s3, "http://bad:9000", "b", "t/_delta_log", create(s3)));
    }
}
