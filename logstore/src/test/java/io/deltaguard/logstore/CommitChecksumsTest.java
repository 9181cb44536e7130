package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What the conditional store sends for a blind append's {@code N.crc} after creating {@code
 * N.json} (CommitChecksums): the derived checksum with one conditional PUT, the previous one
 * from memory when this JVM read or wrote it (else one GET), nothing when it cannot be derived,
 * never an exception, never a replaced file; and Delta's own later write of that checksum
 * through the checkpoint file manager sends nothing.
 */
class CommitChecksumsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String LOG = "t/_delta_log/";

    private FakeS3 s3;
    private JsonNode append;

    @BeforeEach
    void fresh() throws IOException {
        CommitChecksums.resetForTests();
        s3 = new FakeS3(true);
        append = BlindAppendChecksumTest.cases().get(0);
    }

    private void afterCommit(String key, List<String> actions) {
        CommitChecksums.afterCommit(new ConditionalCreate(s3.calls(), 10, new Backoff(1, 2)),
            "fake", "b", key, actions);
    }

    private static String key(long version, String suffix) {
        return LOG + String.format("%020d", version) + suffix;
    }

    private List<String> commit() {
        return BlindAppendChecksumTest.actions(append);
    }

    @Test
    void writesTheDerivedChecksumWithOneConditionalPut() throws IOException {
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        afterCommit(key(7, ".json"), commit());
        assertEquals(Arrays.asList("GET " + key(6, ".crc"), "PUT " + key(7, ".crc")
            + " If-None-Match"), s3.requests);
        assertEquals(append.get("expected"), JSON.readTree(s3.objects.get(key(7, ".crc"))));
        assertTrue(CommitChecksums.takeStoredHere("fake", "b", key(7, ".crc")));
        assertFalse(CommitChecksums.takeStoredHere("fake", "b", key(7, ".crc")), "spent");

        s3.requests.clear();
        afterCommit(key(8, ".json"), commit());
        assertEquals(Collections.singletonList("PUT " + key(8, ".crc") + " If-None-Match"),
            s3.requests, "the previous checksum is the one this JVM just stored: no GET");
    }

    @Test
    void aChecksumDeltaReadOrWroteNeedsNoGet() throws IOException {
        CommitChecksums.seen("fake", "b", key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        afterCommit(key(7, ".json"), commit());
        assertEquals(Collections.singletonList("PUT " + key(7, ".crc") + " If-None-Match"),
            s3.requests);
    }

    @Test
    void withoutThePreviousChecksumNothingIsWritten() {
        afterCommit(key(7, ".json"), commit());
        assertEquals(Collections.singletonList("GET " + key(6, ".crc")), s3.requests);
        assertTrue(s3.objects.isEmpty());
        assertFalse(CommitChecksums.takeStoredHere("fake", "b", key(7, ".crc")));
    }

    @Test
    void anotherWritersChecksumIsNeverReplacedAndNothingThrows() throws IOException {
        byte[] theirs = "{\"numFiles\":9}\n".getBytes(StandardCharsets.UTF_8);
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        s3.objects.put(key(7, ".crc"), theirs);
        afterCommit(key(7, ".json"), commit());
        assertArrayEquals(theirs, s3.objects.get(key(7, ".crc")));
        assertFalse(CommitChecksums.takeStoredHere("fake", "b", key(7, ".crc")));
    }

    @Test
    void aFailedChecksumPutNeverFailsTheCommit() throws IOException {
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        s3.script.add(FakeS3.Fault.ERROR_403);
        afterCommit(key(7, ".json"), commit());
        assertFalse(s3.objects.containsKey(key(7, ".crc")));
        s3.getScript.add(FakeS3.Fault.ERROR_403);
        afterCommit(key(8, ".json"), commit());
        assertFalse(s3.objects.containsKey(key(8, ".crc")));
    }

    @Test
    void notABlindAppendOrNotACommitWritesNothing() throws IOException {
        JsonNode remove = BlindAppendChecksumTest.cases().get(2);
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(remove));
        afterCommit(key(7, ".json"), BlindAppendChecksumTest.actions(remove));
        afterCommit(key(7, ".checkpoint.parquet"), commit());
        afterCommit("t/_delta_log/_last_checkpoint", commit());
        afterCommit(key(0, ".json"), commit());
        assertEquals(Collections.singletonList("GET " + key(6, ".crc")), s3.requests);
        assertFalse(s3.objects.containsKey(key(7, ".crc")));
    }

    @Test
    void aTableCreatedAgainAtTheSamePathIsNotDerivedFromTheOldOnesChecksum() throws IOException {
        byte[] previous = BlindAppendChecksumTest.previous(append);
        CommitChecksums.seen("fake", "b", key(7, ".crc"), previous);
        afterCommit(key(3, ".json"), commit());
        s3.requests.clear();
        afterCommit(key(8, ".json"), commit());
        assertEquals(Collections.singletonList("GET " + key(7, ".crc")), s3.requests,
            "version 7 of the old table is forgotten: read, and absent, so nothing is written");
    }

    @Test
    void theSameBucketOnAnotherEndpointIsAnotherTable() throws IOException {
        byte[] previous = BlindAppendChecksumTest.previous(append);
        CommitChecksums.seen("other", "b", key(6, ".crc"), previous);
        afterCommit(key(7, ".json"), commit());
        assertEquals(Collections.singletonList("GET " + key(6, ".crc")), s3.requests);
        assertTrue(s3.objects.isEmpty());
    }

    @Test
    void aThrottledChecksumGivesUpAfterTwoAttempts() throws IOException {
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        for (int i = 0; i < 5; i++) {
            s3.getScript.add(FakeS3.Fault.ERROR_503);
        }
        afterCommit(key(7, ".json"), commit());
        assertEquals(CommitChecksums.ATTEMPTS, s3.gets, s3.requests.toString());
        assertEquals(0, s3.puts, "no previous checksum read: none written");
        s3.getScript.clear();
        for (int i = 0; i < 5; i++) {
            s3.script.add(FakeS3.Fault.ERROR_503);
        }
        afterCommit(key(7, ".json"), commit());
        assertEquals(CommitChecksums.ATTEMPTS, s3.puts, s3.requests.toString());
        assertFalse(s3.objects.containsKey(key(7, ".crc")));
    }

    @Test
    void deltasOwnWriteOfAStoredChecksumSendsNothing() throws IOException {
        s3.objects.put(key(6, ".crc"), BlindAppendChecksumTest.previous(append));
        afterCommit(key(7, ".json"), commit());
        byte[] stored = s3.objects.get(key(7, ".crc"));
        s3.requests.clear();
        Configuration conf = new Configuration(false);
        conf.set(LogStoreSettings.key(LogStoreSettings.VERIFY_CONDITIONAL_WRITES), "false");
        CheckpointPut out = CheckpointPut.forKey(s3.calls(), "fake", "b", key(7, ".crc"),
            LogStoreSettings.from(conf), false, new CheckpointPut.Fallback() {
                @Override
                public OutputStream open() {
                    throw new AssertionError("no fallback for a small file");
                }

                @Override
                public void cancel(OutputStream opened) {
                }
            }, true);
        out.write("{\"numFiles\":3}\n".getBytes(StandardCharsets.UTF_8));
        out.close();
        assertEquals(Collections.emptyList(), s3.requests);
        assertArrayEquals(stored, s3.objects.get(key(7, ".crc")));
    }

    private static Configuration withManager(String manager) {
        Configuration conf = new Configuration(false);
        if (manager != null) {
            conf.set(CheckpointPut.MANAGER_CLASS_KEY, manager);
        }
        return conf;
    }

    @Test
    void onlyWithDeltaguardsFileManagerAndBothSwitchesOn() {
        LogStoreSettings on = LogStoreSettings.from(new Configuration(false));
        assertTrue(CommitChecksums.enabled(on,
            withManager("io.deltaguard.logstore.S3PutCheckpointFileManager")));
        assertTrue(CommitChecksums.enabled(on,
            withManager("io.deltaguard.logstore.S3PutCheckpointFileManagerSpark35")));
        assertFalse(CommitChecksums.enabled(on, withManager(null)), "Spark's own manager");
        assertFalse(CommitChecksums.enabled(on, withManager(
            "org.apache.spark.sql.execution.streaming.FileContextBasedCheckpointFileManager")));
        Configuration deltaOff = withManager("io.deltaguard.logstore.S3PutCheckpointFileManager");
        deltaOff.set(CommitChecksums.DELTA_WRITE_CHECKSUM, "false");
        assertFalse(CommitChecksums.enabled(on, deltaOff));
        Configuration oursOff = withManager("io.deltaguard.logstore.S3PutCheckpointFileManager");
        oursOff.set(LogStoreSettings.key(LogStoreSettings.COMMIT_CHECKSUMS), "false");
        assertFalse(CommitChecksums.enabled(LogStoreSettings.from(oursOff), oursOff));
    }
}
