package io.deltaguard.logstore;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.util.Optional;
import java.util.UUID;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transition protocol on resolved S3 keys and one DynamoDB commit table: the steps of
 * {@link S3TransitionLogStore} (whose javadoc holds the safety argument), free of Hadoop so the
 * JUnit suite drives it through the SDK adapters with scripted faults.
 *
 * <p>Keys: {@code logDirKey} is the key of {@code <table>/_delta_log} in {@code bucket};
 * {@code tablePath} is the table root as every DynamoDB writer names it
 * ({@code s3a://bucket/table}).
 */
final class TransitionCommit {
    private static final Logger LOG = LoggerFactory.getLogger(TransitionCommit.class);

    private final S3Calls s3;
    private final ConditionalCreate create;
    private final DynamoDBCommitTable table;
    private final long ttlSeconds;

    TransitionCommit(S3Calls s3, ConditionalCreate create, DynamoDBCommitTable table,
                     long ttlSeconds) {
        this.s3 = s3;
        this.create = create;
        this.table = table;
        this.ttlSeconds = ttlSeconds;
    }

    /**
     * Commits {@code body} as version {@code version} ({@code fileName}, 20 digits + .json).
     * Returns normally iff N.json holds {@code body}.
     *
     * @throws FileAlreadyExistsException another writer holds N: N.json exists at the start,
     *     another writer's entry holds N, or (after our entry) another writer's N.json
     * @throws CommitOutcomeUnknownException our entry may or may not hold N (PutItem unsettled),
     *     or our entry holds N but the copy to N.json did not settle
     * @throws IOException before our entry exists (step 1, the temp file): nothing committed
     */
    void commit(String bucket, String logDirKey, String tablePath, String fileName, long version,
                byte[] body) throws IOException {
        commit(bucket, logDirKey, tablePath, fileName, version, body, new CommitMetrics.Tally());
    }

    /** {@link #commit(String, String, String, String, long, byte[])} whose conditional PutItems
     *  and settles are reported to {@code tally} (the create's own PUTs report to the tally its
     *  {@link ConditionalCreate} was given). */
    void commit(String bucket, String logDirKey, String tablePath, String fileName, long version,
                byte[] body, CommitMetrics.Tally tally) throws IOException {
        String fileKey = logDirKey + "/" + fileName;
        String where = "s3://" + bucket + "/" + fileKey;
        if (read(bucket, fileKey).isPresent()) {
            throw new FileAlreadyExistsException(where);
        }
        checkPrevious(bucket, logDirKey, tablePath, fileName, version);
        CommitEntry entry = new CommitEntry(tablePath, fileName,
            ".tmp/" + fileName + "." + UUID.randomUUID(), false, null, CommitEntry.TRANSITION);
        S3LogFiles.overwrite(s3, bucket, logDirKey + "/" + entry.tempPath(), body);
        table.claim(entry, create.maxAttempts(), create.backoff(), tally);
        try {
            create.create(bucket, fileKey, body);
        } catch (FileAlreadyExistsException e) {
            // A conditional writer took N after our PutItem. Mark our entry complete so that no
            // reader copies our temp file to N (it would meet their N.json anyway), then let
            // Delta retry at N+1.
            markComplete(entry, where);
            throw e;
        } catch (IOException e) {
            throw unknown(where, e);
        }
        markComplete(entry, where);
    }

    /**
     * Recovery of an incomplete entry (a writer that stopped after its PutItem): creates N.json
     * from its temp file with the conditional create, then marks the entry complete, also when
     * another writer's N.json is there (that writer took N; the stopped one never reported
     * success). Throws IOException if neither the temp file nor N.json exists, or the create
     * does not settle.
     */
    void repair(String bucket, String logDirKey, CommitEntry entry) throws IOException {
        String fileKey = logDirKey + "/" + entry.fileName();
        String where = "s3://" + bucket + "/" + fileKey;
        Optional<byte[]> temp = read(bucket, logDirKey + "/" + entry.tempPath());
        if (temp.isPresent()) {
            try {
                create.create(bucket, fileKey, temp.get());
                LOG.info("repaired {}: created it from {}", where, entry.tempPath());
            } catch (FileAlreadyExistsException e) {
                LOG.info("{} of an incomplete entry holds another writer's commit; marking the "
                    + "entry complete", where);
            }
        } else if (!read(bucket, fileKey).isPresent()) {
            throw new FileNotFoundException("cannot repair " + where + ": neither it nor its temp "
                + "file " + entry.tempPath() + " exists (DynamoDB " + table.tableName() + ")");
        }
        table.put(entry.asComplete(ttlSeconds), true);
    }

    /** Repairs the table's newest entry if it is incomplete (what a listing of the log does). */
    void repairLatest(String bucket, String logDirKey, String tablePath) throws IOException {
        Optional<CommitEntry> latest = table.latest(tablePath);
        if (latest.isPresent() && !latest.get().complete()) {
            repair(bucket, logDirKey, latest.get());
        }
    }

    /** Delta's step 1: the previous version must be complete in DynamoDB or exist in S3. */
    private void checkPrevious(String bucket, String logDirKey, String tablePath, String fileName,
                               long version) throws IOException {
        if (version > 0) {
            String prevName = String.format("%020d.json", version - 1);
            Optional<CommitEntry> prev = table.get(tablePath, prevName);
            if (prev.isPresent() && !prev.get().complete()) {
                repair(bucket, logDirKey, prev.get());
            } else if (!read(bucket, logDirKey + "/" + prevName).isPresent()) {
                throw new FileSystemException("previous commit s3://" + bucket + "/" + logDirKey
                    + "/" + prevName + " doesn't exist on the file system but does in the "
                    + "external log store");
            }
        } else {
            Optional<CommitEntry> entry = table.get(tablePath, fileName);
            if (entry.isPresent() && entry.get().complete()) {
                throw new FileSystemException("Old entries for table " + tablePath
                    + " still exist in the external log store");
            }
        }
    }

    private void markComplete(CommitEntry entry, String where) {
        try {
            table.put(entry.asComplete(ttlSeconds), true);
        } catch (IOException | RuntimeException e) {
            LOG.info("{}: could not mark the DynamoDB entry of {} complete; a reader's listing "
                + "or the next writer does it", e.getClass().getSimpleName(), where, e);
        }
    }

    private Optional<byte[]> read(String bucket, String key) throws IOException {
        return create.read(bucket, key, "read s3://" + bucket + "/" + key);
    }

    private static CommitOutcomeUnknownException unknown(String where, IOException e) {
        if (e instanceof CommitOutcomeUnknownException) {
            return (CommitOutcomeUnknownException) e;
        }
        return new CommitOutcomeUnknownException(where,
            "our DynamoDB entry holds this version, but creating the file failed: "
                + e.getMessage(), e);
    }
}
