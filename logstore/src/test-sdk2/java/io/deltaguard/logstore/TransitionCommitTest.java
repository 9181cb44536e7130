package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The transition protocol ({@link S3TransitionLogStore}, steps in {@link TransitionCommit})
 * against {@link FakeS3} and {@link FakeDynamoDb} through the real SDK v2 adapters: each writer
 * kind next to it, each crash point, and the faults (409, 503, lost responses) on the PutItem
 * and on the copy.
 */
class TransitionCommitTest {
    private static final String BUCKET = "b";
    private static final String LOG = "t/_delta_log";
    private static final String TABLE = "s3a://b/t";
    private static final long TTL = 3600;

    private final FakeS3 s3 = new FakeS3(true);
    private final FakeDynamoDb ddb = new FakeDynamoDb();

    private static String name(long version) {
        return String.format("%020d.json", version);
    }

    private static byte[] commitBytes(String txn) {
        return ("{\"commitInfo\":{\"txnId\":\"" + txn + "\"}}\n").getBytes(StandardCharsets.UTF_8);
    }

    private TransitionCommit store(int attempts) {
        return new TransitionCommit(s3.calls(), new ConditionalCreate(s3.calls(), attempts,
            new Backoff(1, 2)), new DynamoDBCommitTable(ddb, "delta_log"), TTL);
    }

    private TransitionCommit store() {
        return store(5);
    }

    private void commit(long version, byte[] body) throws IOException {
        store().commit(BUCKET, LOG, TABLE, name(version), version, body);
    }

    private byte[] file(long version) {
        return s3.objects.get(LOG + "/" + name(version));
    }

    private Map<String, AttributeValue> entry(long version) {
        return ddb.item(TABLE, name(version));
    }

    /** Version 0 committed by anyone, with a complete plain entry (a table DynamoDB writers made). */
    private void existingTable() {
        s3.objects.put(LOG + "/" + name(0), commitBytes("v0"));
        ddb.store(DynamoDBCommitTable.toItem(new CommitEntry(TABLE, name(0),
            ".tmp/" + name(0) + ".p", true, 1L)));
    }

    /** A writer that stopped right after its PutItem: temp file + incomplete entry. */
    private void stoppedAfterPutItem(long version, byte[] body, String marker) {
        String temp = ".tmp/" + name(version) + ".dead";
        s3.objects.put(LOG + "/" + temp, body);
        ddb.store(DynamoDBCommitTable.toItem(new CommitEntry(TABLE, name(version), temp, false,
            null, marker)));
    }

    private long puts(String key) {
        return s3.requests.stream().filter(r -> r.startsWith("PUT " + key)).count();
    }

    @Test
    void commitFollowsTheDynamoDBProtocolWithAMarkedEntry() throws IOException {
        existingTable();
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
        Map<String, AttributeValue> item = entry(1);
        assertEquals(Set.of("tablePath", "fileName", "tempPath", "complete", "expireTime",
            CommitEntry.MARKER_ATTRIBUTE), item.keySet());
        assertEquals("true", item.get("complete").s());
        assertEquals(CommitEntry.TRANSITION, item.get(CommitEntry.MARKER_ATTRIBUTE).s());
        assertArrayEquals(ours, s3.objects.get(LOG + "/" + item.get("tempPath").s()),
            "the temp file holds the commit, as Delta's recovery expects");
        List<String> order = s3.requests.stream().filter(r -> r.startsWith("PUT"))
            .collect(Collectors.toList());
        assertEquals(List.of("PUT " + LOG + "/" + item.get("tempPath").s(),
            "PUT " + LOG + "/" + name(1) + " If-None-Match"), order,
            "temp file first, then N.json, only with If-None-Match");
        assertEquals(List.of("GET " + name(0), "PUT " + name(1) + " conditional", "PUT " + name(1)),
            ddb.requests, "step 1, the conditional PutItem, then completion");
        // a plain reader (Delta's item mapping) reads the entry without the marker
        CommitEntry plain = DynamoDBCommitTable.fromItem(item);
        assertEquals(name(1), plain.fileName());
    }

    @Test
    void anotherWritersEntryIsFileAlreadyExistsAndNothingIsWritten() {
        existingTable();
        // a plain writer's PutItem holds N; its copy has not happened yet
        stoppedAfterPutItem(1, commitBytes("plain"), null);
        assertThrows(FileAlreadyExistsException.class, () -> commit(1, commitBytes("ours")));
        assertEquals(0, puts(LOG + "/" + name(1)), "a loser of the PutItem never touches N.json");
        assertEquals(".tmp/" + name(1) + ".dead", entry(1).get("tempPath").s(),
            "the winner's entry is untouched");
    }

    @Test
    void existingFileIsFileAlreadyExistsBeforeAnyEntry() {
        existingTable();
        s3.objects.put(LOG + "/" + name(1), commitBytes("conditional"));
        assertThrows(FileAlreadyExistsException.class, () -> commit(1, commitBytes("ours")));
        assertNull(entry(1));
    }

    @Test
    void conditionalWriterTakingNAfterOurPutItemWinsAndOurEntryIsCompleted() {
        existingTable();
        byte[] theirs = commitBytes("conditional");
        ddb.beforePut = () -> { }; // the PutItem lands; the conditional writer is faster on S3
        s3.beforePut = () -> {
            if (entry(1) != null) {
                s3.objects.putIfAbsent(LOG + "/" + name(1), theirs);
            }
        };
        assertThrows(FileAlreadyExistsException.class, () -> commit(1, commitBytes("ours")));
        assertArrayEquals(theirs, file(1), "their commit is never replaced");
        assertEquals("true", entry(1).get("complete").s(),
            "our entry is complete: no reader copies our temp file to N");
        assertEquals(CommitEntry.TRANSITION, entry(1).get(CommitEntry.MARKER_ATTRIBUTE).s());
    }

    @Test
    void conditionalCommitsWithoutEntriesAreFollowed() throws IOException {
        existingTable();
        s3.objects.put(LOG + "/" + name(1), commitBytes("conditional"));
        byte[] ours = commitBytes("ours");
        commit(2, ours);
        assertArrayEquals(ours, file(2));
        assertNull(entry(1));
    }

    @Test
    void missingPreviousCommitIsAnError() {
        existingTable();
        IOException e = assertThrows(IOException.class, () -> commit(2, commitBytes("ours")));
        assertTrue(e.getMessage().contains(name(1)), e.getMessage());
        assertNull(entry(2));
    }

    // -- faults on the PutItem --------------------------------------------------------------

    @Test
    void putItemServerErrorsAndThrottlingAreRetriedConditionally() throws IOException {
        existingTable();
        ddb.script.add(FakeDynamoDb.Fault.ERROR_500);
        ddb.script.add(FakeDynamoDb.Fault.THROTTLED);
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
        assertEquals(3, ddb.requests.stream().filter(r -> r.endsWith("conditional")).count());
    }

    @Test
    void lostPutItemResponseIsOursNotAConflict() throws IOException {
        existingTable();
        ddb.script.add(FakeDynamoDb.Fault.DROP_RESPONSE);
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
        assertEquals(1, ddb.requests.stream().filter(r -> r.endsWith("conditional")).count(),
            "the read-back settles it: no second PutItem");
    }

    @Test
    void lostPutItemResponseWhenAnotherWriterWonIsFileAlreadyExists() {
        existingTable();
        ddb.beforePut = () -> {
            if (entry(1) == null) {
                ddb.store(DynamoDBCommitTable.toItem(new CommitEntry(TABLE, name(1), ".tmp/other",
                    false, null)));
            }
        };
        ddb.script.add(FakeDynamoDb.Fault.ERROR_500);
        assertThrows(FileAlreadyExistsException.class, () -> commit(1, commitBytes("ours")));
        assertEquals(0, puts(LOG + "/" + name(1)));
    }

    @Test
    void unsettledPutItemIsCommitOutcomeUnknownAndWritesNoFile() {
        existingTable();
        for (int i = 0; i < 3; i++) {
            ddb.script.add(FakeDynamoDb.Fault.ERROR_500);
        }
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> store(3).commit(BUCKET, LOG, TABLE, name(1), 1, commitBytes("ours")));
        assertTrue(e.getMessage().contains("InternalServerError"), e.getMessage());
        assertEquals(0, puts(LOG + "/" + name(1)));
    }

    // -- faults on the copy -----------------------------------------------------------------

    private void copyFaults(FakeS3.Fault... faults) {
        s3.script.add(FakeS3.Fault.NONE); // the temp file
        for (FakeS3.Fault f : faults) {
            s3.script.add(f);
        }
    }

    @Test
    void copyConflictAndThrottlingAreRetriedConditionally() throws IOException {
        existingTable();
        copyFaults(FakeS3.Fault.ERROR_409, FakeS3.Fault.ERROR_503);
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
        assertEquals(3, puts(LOG + "/" + name(1) + " If-None-Match"));
        assertEquals(3, puts(LOG + "/" + name(1)), "never a PUT of N.json without the condition");
        assertEquals("true", entry(1).get("complete").s());
    }

    @Test
    void lostCopyResponseIsSuccessNotADuplicate() throws IOException {
        existingTable();
        copyFaults(FakeS3.Fault.DROP_RESPONSE);
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
        assertEquals(1, puts(LOG + "/" + name(1)), "the read-back settles it: no second PUT");
        assertEquals("true", entry(1).get("complete").s());
    }

    @Test
    void unsettledCopyIsCommitOutcomeUnknownAndRecoveryFinishesIt() throws IOException {
        existingTable();
        copyFaults(FakeS3.Fault.ERROR_503, FakeS3.Fault.ERROR_503, FakeS3.Fault.ERROR_503);
        byte[] ours = commitBytes("ours");
        assertThrows(CommitOutcomeUnknownException.class,
            () -> store(3).commit(BUCKET, LOG, TABLE, name(1), 1, ours));
        assertEquals("false", entry(1).get("complete").s(), "left to recovery");
        store().repairLatest(BUCKET, LOG, TABLE);
        assertArrayEquals(ours, file(1), "our entry held N: recovery makes it visible");
        assertEquals("true", entry(1).get("complete").s());
    }

    @Test
    void forbiddenCopyIsCommitOutcomeUnknown() {
        existingTable();
        copyFaults(FakeS3.Fault.ERROR_403);
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> commit(1, commitBytes("ours")));
        assertTrue(e.getMessage().contains("AccessDenied"), e.getMessage());
    }

    // -- crash points and recovery ----------------------------------------------------------

    @Test
    void crashAfterTempFileLeavesNothingToRepair() throws IOException {
        existingTable();
        s3.objects.put(LOG + "/.tmp/" + name(1) + ".dead", commitBytes("dead"));
        byte[] ours = commitBytes("ours");
        commit(1, ours);
        assertArrayEquals(ours, file(1));
    }

    @Test
    void crashAfterPutItemIsRepairedByTheNextWriter() throws IOException {
        existingTable();
        byte[] dead = commitBytes("dead");
        stoppedAfterPutItem(1, dead, CommitEntry.TRANSITION);
        byte[] ours = commitBytes("ours");
        commit(2, ours);
        assertArrayEquals(dead, file(1), "the dead writer's commit point held: it lands");
        assertArrayEquals(ours, file(2));
        assertEquals("true", entry(1).get("complete").s());
        assertEquals(CommitEntry.TRANSITION, entry(1).get(CommitEntry.MARKER_ATTRIBUTE).s(),
            "repair keeps the marker");
    }

    @Test
    void crashAfterPutItemThenConditionalWriterTakesN() throws IOException {
        existingTable();
        stoppedAfterPutItem(1, commitBytes("dead"), CommitEntry.TRANSITION);
        byte[] theirs = commitBytes("conditional");
        s3.objects.put(LOG + "/" + name(1), theirs);
        store().repairLatest(BUCKET, LOG, TABLE);
        assertArrayEquals(theirs, file(1), "repair never replaces another writer's commit");
        assertEquals("true", entry(1).get("complete").s());
    }

    @Test
    void crashDuringOrAfterTheCopyIsSettledByRepair() throws IOException {
        existingTable();
        byte[] dead = commitBytes("dead");
        stoppedAfterPutItem(1, dead, CommitEntry.TRANSITION);
        s3.objects.put(LOG + "/" + name(1), dead); // the copy landed, the entry is not complete
        store().repairLatest(BUCKET, LOG, TABLE);
        assertArrayEquals(dead, file(1));
        assertEquals("true", entry(1).get("complete").s());
    }

    @Test
    void plainWritersIncompleteEntryIsRepairedConditionally() throws IOException {
        existingTable();
        byte[] plain = commitBytes("plain");
        stoppedAfterPutItem(1, plain, null);
        store().repairLatest(BUCKET, LOG, TABLE);
        assertArrayEquals(plain, file(1));
        assertEquals(1, puts(LOG + "/" + name(1) + " If-None-Match"));
        assertFalse(entry(1).containsKey(CommitEntry.MARKER_ATTRIBUTE),
            "a plain entry stays unmarked: migrate status must still see the plain writer");
    }

    @Test
    void repairWithoutTempFileOrCommitIsAnError() {
        existingTable();
        ddb.store(DynamoDBCommitTable.toItem(new CommitEntry(TABLE, name(1), ".tmp/gone", false,
            null)));
        IOException e = assertThrows(IOException.class,
            () -> store().repairLatest(BUCKET, LOG, TABLE));
        assertTrue(e.getMessage().contains(".tmp/gone"), e.getMessage());
    }

    @Test
    void concurrentTransitionWritersCommitEachVersionOnce() throws Exception {
        existingTable();
        int writers = 4;
        int each = 5;
        java.util.concurrent.ConcurrentHashMap<String, Long> landed =
            new java.util.concurrent.ConcurrentHashMap<>();
        Thread[] threads = new Thread[writers];
        for (int w = 0; w < writers; w++) {
            final int id = w;
            threads[w] = new Thread(() -> {
                for (int i = 0; i < each; i++) {
                    byte[] body = commitBytes("w" + id + "c" + i);
                    for (long v = 1; ; v++) {
                        try {
                            store().commit(BUCKET, LOG, TABLE, name(v), v, body);
                            landed.put("w" + id + "c" + i, v);
                            break;
                        } catch (FileAlreadyExistsException e) {
                            // Delta's loop: the next version
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }
            });
            threads[w].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(writers * each, landed.size());
        assertEquals(writers * each, Set.copyOf(landed.values()).size(), "one version each");
        for (Map.Entry<String, Long> e : landed.entrySet()) {
            assertArrayEquals(commitBytes(e.getKey()), file(e.getValue()));
        }
    }
}
