package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;

import org.junit.jupiter.api.Test;

class ConditionalCreateTest {
    private static final String KEY = "t/_delta_log/00000000000000000001.json";
    private static final byte[] OURS = "{\"commitInfo\":{\"txnId\":\"a\"}}\n".getBytes(StandardCharsets.UTF_8);
    private static final byte[] THEIRS = "{\"commitInfo\":{\"txnId\":\"b\"}}\n".getBytes(StandardCharsets.UTF_8);

    private static ConditionalCreate create(FakeS3 s3, int attempts) {
        return new ConditionalCreate(s3.calls(), attempts, new Backoff(1, 2));
    }

    @Test
    void createsAbsentKey() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        create(s3, 3).create("b", KEY, OURS);
        assertArrayEquals(OURS, s3.objects.get(KEY));
        assertEquals(1, s3.puts);
        assertEquals(0, s3.gets, "a clean success needs no read-back");
    }

    @Test
    void everyAttemptOfAMarkedCreateCarriesTheMark() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_503);
        java.util.Map<String, String> mark = CommitMark.of(CommitMark.CONDITIONAL);
        create(s3, 3).marking(mark).create("b", KEY, OURS);
        assertEquals(java.util.List.of(mark, mark), s3.putMetadata, "the retry carries it too");
        assertEquals(mark, s3.metadata.get(KEY));
        assertEquals("s3-conditional/jvm/", CommitMark.value(CommitMark.CONDITIONAL)
            .substring(0, "s3-conditional/jvm/".length()));
        assertEquals("deltaguard-commit", mark.keySet().iterator().next());
    }

    @Test
    void theConditionalStoreMarksCommitsNotCheckpoints() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        LogStoreSettings settings = LogStoreSettings.from(new org.apache.hadoop.conf.Configuration());
        S3ConditionalLogStore.write(s3.calls(), settings, "fake", "b", KEY, OURS, false,
            CommitMark.of(CommitMark.CONDITIONAL));
        S3ConditionalLogStore.write(s3.calls(), settings, "fake", "b", "t/_delta_log/x.parquet",
            OURS, false);
        assertEquals(CommitMark.of(CommitMark.CONDITIONAL), s3.metadata.get(KEY));
        assertEquals(java.util.Map.of(), s3.metadata.get("t/_delta_log/x.parquet"));
    }

    @Test
    void otherWritersObjectIsFileAlreadyExistsAndUntouched() {
        FakeS3 s3 = new FakeS3(true);
        s3.objects.put(KEY, THEIRS);
        assertThrows(FileAlreadyExistsException.class, () -> create(s3, 3).create("b", KEY, OURS));
        assertArrayEquals(THEIRS, s3.objects.get(KEY));
        assertEquals(1, s3.puts, "a 412 with foreign bytes is final, not retried");
    }

    @Test
    void lostResponseIsSuccessNotDuplicate() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.DROP_RESPONSE);
        create(s3, 3).create("b", KEY, OURS);
        assertArrayEquals(OURS, s3.objects.get(KEY));
        assertEquals(1, s3.puts, "the read-back settles it: no second PUT");
    }

    @Test
    void conflictAndThrottlingAreRetriedConditionally() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_409);
        s3.script.add(FakeS3.Fault.ERROR_503);
        s3.script.add(FakeS3.Fault.RESET_BEFORE);
        create(s3, 5).create("b", KEY, OURS);
        assertArrayEquals(OURS, s3.objects.get(KEY));
        assertEquals(4, s3.puts);
    }

    @Test
    void conflictThenOtherWriterWinsIsFileAlreadyExists() {
        FakeS3 s3 = new FakeS3(true);
        s3.beforePut = () -> {
            if (s3.puts == 0) {
                s3.objects.put(KEY, THEIRS); // the concurrent writer that caused the 409
            }
        };
        s3.script.add(FakeS3.Fault.ERROR_409);
        assertThrows(FileAlreadyExistsException.class, () -> create(s3, 5).create("b", KEY, OURS));
        assertArrayEquals(THEIRS, s3.objects.get(KEY));
    }

    @Test
    void attemptBudgetEndsInOutcomeUnknownNamingKey() {
        FakeS3 s3 = new FakeS3(true);
        for (int i = 0; i < 3; i++) {
            s3.script.add(FakeS3.Fault.ERROR_503);
        }
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> create(s3, 3).create("b", KEY, OURS));
        assertEquals("s3://b/" + KEY, e.location());
        assertTrue(e.getMessage().contains("s3://b/" + KEY), e.getMessage());
        assertTrue(e.getMessage().contains("SlowDown"), e.getMessage());
        assertHowToCheck(e);
    }

    /** The message says the commit may have landed, where and how to look (issue 21, item 6). */
    private static void assertHowToCheck(CommitOutcomeUnknownException e) {
        String m = e.getMessage();
        assertTrue(m.contains("may have landed"), m);
        assertTrue(m.contains("version 1 of s3://b/t"), m);
        assertTrue(m.contains("`deltaguard history s3://b/t`"), m);
        assertTrue(m.contains("userMetadata") && m.contains("txn"), m);
    }

    @Test
    void preconditionFailedWithNothingReadableEndsInOutcomeUnknown() {
        FakeS3 s3 = new FakeS3(true);
        for (int i = 0; i < 3; i++) {
            s3.script.add(FakeS3.Fault.ERROR_412);
        }
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> create(s3, 3).create("b", KEY, OURS));
        assertTrue(e.getMessage().contains("PreconditionFailed"), e.getMessage());
        assertTrue(e.getMessage().contains("not readable afterwards"), e.getMessage());
        assertHowToCheck(e);
        assertEquals(3, s3.puts, "each 412 with nothing stored is retried, conditionally");
        assertEquals(3, s3.gets, "each attempt is settled by a read-back");
        assertTrue(!s3.objects.containsKey(KEY));
    }

    @Test
    void readBackThatKeepsFailingIsOutcomeUnknown() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_503);
        for (int i = 0; i < 3; i++) {
            s3.getScript.add(FakeS3.Fault.ERROR_503);
        }
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> create(s3, 3).create("b", KEY, OURS));
        assertTrue(e.getMessage().contains("read-back"), e.getMessage());
        assertHowToCheck(e);
        assertEquals(1, s3.puts, "no PUT before the earlier one is settled");
        assertEquals(3, s3.gets, "the read-back has the same budget");
    }

    @Test
    void landedPutWhoseEveryResponseIsLostIsOutcomeUnknownAndHoldsOurBytes() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.DROP_RESPONSE);
        for (int i = 0; i < 3; i++) {
            s3.getScript.add(FakeS3.Fault.DROP_RESPONSE);
        }
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> create(s3, 3).create("b", KEY, OURS));
        assertHowToCheck(e);
        assertArrayEquals(OURS, s3.objects.get(KEY), "the commit did land: unknown, not failed");
        assertEquals(1, s3.puts);
    }

    @Test
    void verifierProbeThatDoesNotSettleIsNoCommitOutcome() {
        ConditionalWriteVerifier.resetForTests();
        FakeS3 s3 = new FakeS3(true);
        for (int i = 0; i < 3; i++) {
            s3.script.add(FakeS3.Fault.ERROR_503);
        }
        IOException e = assertThrows(IOException.class, () -> ConditionalWriteVerifier
            .ensureVerified(s3.calls(), "http://fake", "b", "t/_delta_log", create(s3, 3)));
        assertTrue(!(e instanceof CommitOutcomeUnknownException), e.toString());
        assertTrue(e.getMessage().contains("Could not verify conditional writes"), e.getMessage());
    }

    @Test
    void accessDeniedIsNotRetried() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_403);
        IOException e = assertThrows(IOException.class, () -> create(s3, 5).create("b", KEY, OURS));
        assertTrue(e.getMessage().contains("AccessDenied"), e.getMessage());
        assertTrue(!(e instanceof CommitOutcomeUnknownException), "nothing was written: " + e);
        assertEquals(1, s3.puts);
    }

    @Test
    void fatalErrorAfterAnUnsettledAttemptIsOutcomeUnknown() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_503);
        s3.script.add(FakeS3.Fault.ERROR_403);
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> create(s3, 5).create("b", KEY, OURS));
        assertHowToCheck(e);
        assertTrue(e.getMessage().contains("AccessDenied"), e.getMessage());
        assertEquals(2, s3.puts);
    }
}
