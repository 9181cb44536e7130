package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

class DynamoDBPiecesTest {
    @Test
    void itemsHaveExactlyDeltasAttributes() {
        CommitEntry incomplete = new CommitEntry("s3a://b/t", "00000000000000000001.json",
            ".tmp/00000000000000000001.json.u", false, null);
        Map<String, AttributeValue> item = DynamoDBCommitTable.toItem(incomplete);
        assertEquals(Map.of(
            "tablePath", AttributeValue.fromS("s3a://b/t"),
            "fileName", AttributeValue.fromS("00000000000000000001.json"),
            "tempPath", AttributeValue.fromS(".tmp/00000000000000000001.json.u"),
            "complete", AttributeValue.fromS("false")), item);
        CommitEntry complete = incomplete.asComplete(100);
        Map<String, AttributeValue> done = DynamoDBCommitTable.toItem(complete);
        assertEquals("true", done.get("complete").s());
        long expire = Long.parseLong(done.get("expireTime").n());
        assertTrue(Math.abs(expire - (System.currentTimeMillis() / 1000 + 100)) <= 2);
        assertEquals(complete, DynamoDBCommitTable.fromItem(done));
        assertNull(DynamoDBCommitTable.fromItem(item).expireTime());
        assertEquals("s3a://b/t/_delta_log/.tmp/00000000000000000001.json.u",
            incomplete.absoluteTempPath().toString());
        assertEquals("s3a://b/t/_delta_log/00000000000000000001.json",
            incomplete.absoluteFilePath().toString());
    }

    @Test
    void settingsUseDeltasKeysWithBothPrefixes() {
        Configuration conf = new Configuration(false);
        DynamoDBSettings defaults = DynamoDBSettings.from(conf);
        assertEquals("delta_log", defaults.tableName);
        assertEquals("us-east-1", defaults.region);
        assertEquals(86400, defaults.ttlSeconds);
        assertNull(defaults.endpoint);
        conf.set("spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName", "commits");
        conf.set("io.delta.storage.S3DynamoDBLogStore.ddb.endpoint", "http://127.0.0.1:4566");
        conf.set("io.delta.storage.S3DynamoDBLogStore.ddb.ttl", "7200s");
        DynamoDBSettings s = DynamoDBSettings.from(conf);
        assertEquals("commits", s.tableName);
        assertEquals("http://127.0.0.1:4566", s.endpoint);
        assertEquals(7200, s.ttlSeconds);
        conf.set("io.delta.storage.S3DynamoDBLogStore.ddb.tableName", "other");
        assertThrows(IllegalArgumentException.class, () -> DynamoDBSettings.from(conf));
    }

    @Test
    void negativeTtlIsRejected() {
        Configuration conf = new Configuration(false);
        conf.set("io.delta.storage.S3DynamoDBLogStore.ddb.ttl", "-1");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> DynamoDBSettings.from(conf));
        assertTrue(e.getMessage().contains("ddb.ttl"));
    }

    private static final CommitEntry OURS = new CommitEntry("s3a://b/t",
        "00000000000000000001.json", ".tmp/00000000000000000001.json.ours", false, null);
    private static final CommitEntry THEIRS = new CommitEntry("s3a://b/t",
        "00000000000000000001.json", ".tmp/00000000000000000001.json.theirs", false, null);

    private static DynamoDBCommitTable table(ScriptedDynamoDb ddb) {
        return new DynamoDBCommitTable(ddb, "delta_log");
    }

    /** The commit point with one PutItem: what a single attempt settles, or leaves unknown. */
    private static void claimOnce(ScriptedDynamoDb ddb) throws IOException {
        table(ddb).claim(OURS, 1, new Backoff(1, 1));
    }

    @Test
    void commitPointWithLostResponseIsOursNotAConflict() throws IOException {
        ScriptedDynamoDb ddb = new ScriptedDynamoDb();
        ddb.putScript.add(ScriptedDynamoDb.Fault.DROP_RESPONSE);
        claimOnce(ddb);
        assertEquals(OURS, table(ddb).get("s3a://b/t", OURS.fileName()).get());
        assertEquals(1, ddb.puts);
    }

    @Test
    void commitPointWithAnotherWritersEntryIsFileAlreadyExists() {
        ScriptedDynamoDb ddb = new ScriptedDynamoDb();
        ddb.items.put("s3a://b/t|" + THEIRS.fileName(), DynamoDBCommitTable.toItem(THEIRS));
        ddb.putScript.add(ScriptedDynamoDb.Fault.ERROR_500);
        assertThrows(FileAlreadyExistsException.class, () -> claimOnce(ddb));
    }

    @Test
    void commitPointFailureWithNoEntryYetIsOutcomeUnknown() {
        ScriptedDynamoDb ddb = new ScriptedDynamoDb();
        ddb.putScript.add(ScriptedDynamoDb.Fault.ERROR_500);
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> claimOnce(ddb));
        assertEquals("s3a://b/t/_delta_log/00000000000000000001.json", e.location());
        assertTrue(e.getMessage().contains("InternalServerError"), e.getMessage());
        assertTrue(e.getMessage().contains("`deltaguard history s3a://b/t`"), e.getMessage());
        assertTrue(e.getMessage().contains(OURS.tempPath()), e.getMessage());
    }

    @Test
    void commitPointWhoseReadBackFailsIsOutcomeUnknown() {
        ScriptedDynamoDb ddb = new ScriptedDynamoDb();
        ddb.putScript.add(ScriptedDynamoDb.Fault.DROP_RESPONSE);
        ddb.getScript.add(ScriptedDynamoDb.Fault.RESET_BEFORE);
        CommitOutcomeUnknownException e = assertThrows(CommitOutcomeUnknownException.class,
            () -> claimOnce(ddb));
        assertTrue(e.getMessage().contains("read-back failed"), e.getMessage());
        assertTrue(ddb.items.containsKey("s3a://b/t|" + OURS.fileName()), "it did land");
    }

    @Test
    void commitPointRefusalIsAPlainIOExceptionNothingWritten() {
        ScriptedDynamoDb ddb = new ScriptedDynamoDb();
        ddb.putScript.add(ScriptedDynamoDb.Fault.ERROR_403);
        IOException e = assertThrows(IOException.class, () -> claimOnce(ddb));
        assertFalse(e instanceof CommitOutcomeUnknownException, e.toString());
        assertTrue(ddb.items.isEmpty());
        assertEquals(0, ddb.gets, "a refusal needs no read-back");
    }
}
