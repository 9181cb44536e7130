package io.deltaguard.logstore;

import org.apache.hadoop.fs.Path;

/**
 * One item of the DynamoDB commit table, with exactly the attributes of Delta's
 * S3DynamoDBLogStore: {@code tablePath} (S, HASH), {@code fileName} (S, RANGE), {@code tempPath}
 * (S, relative to {@code _delta_log}), {@code complete} (S, "true"/"false") and
 * {@code expireTime} (N, epoch seconds, only once complete). Entries written by
 * {@link S3TransitionLogStore} also carry {@link #MARKER_ATTRIBUTE} = {@link #TRANSITION}; Delta's
 * store reads items by attribute name and ignores it (and drops it when it rewrites an entry).
 */
final class CommitEntry {
    /** The marker attribute (S); the Python mirror is deltaguard.logstore.dynamodb_table. */
    static final String MARKER_ATTRIBUTE = "deltaguardProtocol";
    /** Its value on entries of the transition store. */
    static final String TRANSITION = "transition";

    private final String tablePath;
    private final String fileName;
    private final String tempPath;
    private final boolean complete;
    private final Long expireTime;
    private final String marker;

    /**
     * @param tablePath the table root as Delta's store renders it (qualified, no user info)
     * @param fileName the commit file name, {@code N.json} zero-padded to 20 digits
     * @param tempPath the temp file T(N), relative to {@code _delta_log}
     * @param complete true once N.json holds T(N)'s bytes
     * @param expireTime when DynamoDB's TTL may remove the item; null while incomplete
     */
    CommitEntry(String tablePath, String fileName, String tempPath, boolean complete,
                Long expireTime) {
        this(tablePath, fileName, tempPath, complete, expireTime, null);
    }

    /** @param marker the {@link #MARKER_ATTRIBUTE} value, or null for a plain entry */
    CommitEntry(String tablePath, String fileName, String tempPath, boolean complete,
                Long expireTime, String marker) {
        this.tablePath = tablePath;
        this.fileName = fileName;
        this.tempPath = tempPath;
        this.complete = complete;
        this.expireTime = expireTime;
        this.marker = marker;
    }

    String tablePath() {
        return tablePath;
    }

    String fileName() {
        return fileName;
    }

    String tempPath() {
        return tempPath;
    }

    boolean complete() {
        return complete;
    }

    Long expireTime() {
        return expireTime;
    }

    /** The marker, or null for a plain (Delta-protocol) entry. */
    String marker() {
        return marker;
    }

    /** Same writer, same attempt: the same table, file and temp file. */
    boolean sameAttempt(CommitEntry other) {
        return tablePath.equals(other.tablePath) && fileName.equals(other.fileName)
            && tempPath.equals(other.tempPath);
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof CommitEntry)) {
            return false;
        }
        CommitEntry e = (CommitEntry) o;
        return tablePath.equals(e.tablePath) && fileName.equals(e.fileName)
            && tempPath.equals(e.tempPath) && complete == e.complete
            && java.util.Objects.equals(expireTime, e.expireTime)
            && java.util.Objects.equals(marker, e.marker);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(tablePath, fileName, tempPath, complete, expireTime, marker);
    }

    @Override
    public String toString() {
        return "CommitEntry[" + tablePath + ", " + fileName + ", " + tempPath + ", complete="
            + complete + ", expireTime=" + expireTime + (marker == null ? "" : ", " + marker) + "]";
    }

    /** This entry marked complete, expiring {@code ttlSeconds} from now; the marker is kept. */
    CommitEntry asComplete(long ttlSeconds) {
        return new CommitEntry(tablePath, fileName, tempPath, true,
            System.currentTimeMillis() / 1000L + ttlSeconds, marker);
    }

    Path absoluteFilePath() {
        return new Path(new Path(new Path(tablePath), "_delta_log"), fileName);
    }

    Path absoluteTempPath() {
        return new Path(new Path(new Path(tablePath), "_delta_log"), tempPath);
    }
}
