package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The version checksum {@code N.crc} of a blind append, written by {@link S3ConditionalLogStore}
 * right after it created {@code N.json}, instead of seconds later by Delta.
 *
 * <p><b>Why.</b> A Spark driver that commits {@code N+1} derives its own checksum from {@code
 * N.crc}; without it, it rebuilds the whole table state with Spark jobs. Delta writes {@code
 * N.crc} in a post-commit hook, and at a checkpoint version only after its commit statistics
 * have rebuilt the state: seconds in which every other driver that commits finds no checksum
 * and rebuilds too (measured in {@code docs/design/logstore.md}, "The checkpoint version under
 * contention"). Written by the store, {@code N.crc} is there one PUT after {@code N.json}.
 *
 * <p><b>Contract.</b> {@link #afterCommit} is best effort and never throws: the commit has
 * already been decided by the conditional create of {@code N.json}, and nothing here can change
 * it. It writes {@code N.crc} only when {@link BlindAppendChecksum} can derive it exactly from
 * {@code (N-1).crc} (taken from this JVM's memory of the newest checksum Delta read or wrote,
 * or the store stored, for the table on that endpoint, else one GET; none there means none
 * written), with the same conditional create as a commit (If-None-Match, read-back of an
 * unknown outcome) but at most {@link #ATTEMPTS} attempts, so it never replaces a checksum and
 * delays a throttled commit's return little. A checksum another writer stored first is logged
 * at debug level, any other failure as a warning. It
 * writes nothing when Delta's own {@code spark.databricks.delta.writeChecksumFile.enabled} is
 * false (Spark copies SQL settings into the Hadoop configuration each write gets), when {@code
 * deltaguard.logstore.commitChecksums} is false, or when no deltaguard checkpoint file manager
 * is selected ({@link #enabled} says why). A checksum stored here is remembered, so that
 * Delta's own write of the same file through deltaguard's checkpoint file manager sends nothing
 * ({@link #takeStoredHere}; see {@link CheckpointPut}): the file exists, and Delta's write of it
 * would fail with a 412 and a logged warning. What is not written here, Delta writes as before.
 */
final class CommitChecksums {
    private static final Logger LOG = LoggerFactory.getLogger(CommitChecksums.class);
    /** Delta's own switch for checksum files (a Spark SQL setting, default true). */
    static final String DELTA_WRITE_CHECKSUM = "spark.databricks.delta.writeChecksumFile.enabled";

    private static final Pattern COMMIT = Pattern.compile("(.*_delta_log/)(\\d{20})\\.json");
    private static final Pattern CHECKSUM = Pattern.compile("(.*_delta_log/)(\\d{20})\\.crc");
    private static final int TABLES_REMEMBERED = 1_000;
    private static final int STORED_REMEMBERED = 10_000;
    /** Attempts of the checksum's GET and of its PUT (the commit's own budget is 10). */
    static final int ATTEMPTS = 2;

    /** Per log directory ({@code endpoint bucket/..._delta_log/}): the newest checksum read or
     * stored. */
    private static final Map<String, Known> NEWEST = lru(TABLES_REMEMBERED);
    /** {@code endpoint bucket/key} of each checksum this JVM stored in {@link #afterCommit}
     * and Delta has not written yet. */
    private static final Map<String, Boolean> STORED = lru(STORED_REMEMBERED);

    private CommitChecksums() {}

    /**
     * Whether the store writes checksums for writes with {@code hadoopConf}: its own setting
     * and Delta's are on, and one of deltaguard's checkpoint file managers is selected. Without
     * one, Delta's own write of the same checksum (Spark's temp file plus rename) would find
     * the file there, leave its temp file in {@code _delta_log} and log a warning per commit.
     */
    static boolean enabled(LogStoreSettings settings, Configuration hadoopConf) {
        return settings.commitChecksums()
            && hadoopConf.getBoolean(DELTA_WRITE_CHECKSUM, true)
            && CheckpointPut.managerSelected(hadoopConf);
    }

    /**
     * After the create of {@code key} (a commit file {@code N.json} holding the lines {@code
     * actions}) on {@code endpoint} succeeded: writes {@code N.crc} if it can be derived (class
     * contract), through {@code commitCreate} (the commit's client and backoff) cut to at most
     * {@link #ATTEMPTS} attempts for the GET and for the PUT: the commit has landed, and a
     * checksum is not worth delaying its return. Never throws.
     */
    static void afterCommit(ConditionalCreate commitCreate, String endpoint, String bucket,
                            String key, List<String> actions) {
        String crcKey = null;
        try {
            Matcher commit = COMMIT.matcher(key);
            if (!commit.matches()) {
                return;
            }
            String logDir = commit.group(1);
            long version = Long.parseLong(commit.group(2));
            String table = where(endpoint, bucket, logDir);
            crcKey = checksumKey(logDir, version);
            STORED.remove(where(endpoint, bucket, crcKey));
            forgetIfRecreated(table, version);
            if (version == 0) {
                return;
            }
            ConditionalCreate create = commitCreate.withMaxAttempts(ATTEMPTS);
            byte[] previous = previous(create, table, bucket, logDir, version - 1);
            if (previous == null) {
                return;
            }
            byte[] checksum = BlindAppendChecksum.derive(previous, actions);
            if (checksum == null) {
                return;
            }
            create.create(bucket, crcKey, checksum);
            STORED.put(where(endpoint, bucket, crcKey), Boolean.TRUE);
            remember(table, version, checksum);
        } catch (FileAlreadyExistsException e) {
            LOG.debug("s3://{}/{} was already written by another writer", bucket, crcKey);
        } catch (IOException | RuntimeException | LinkageError e) {
            LOG.warn("Could not write the checksum s3://{}/{} (the commit itself landed; Delta "
                + "writes the checksum after the commit instead): {}", bucket, crcKey,
                e.toString());
        }
    }

    /**
     * Remembers a checksum Delta read through the store or wrote through deltaguard's
     * checkpoint file manager, if {@code key} is one: the next commit derives from it with no
     * GET. Never throws.
     */
    static void seen(String endpoint, String bucket, String key, byte[] body) {
        try {
            Matcher checksum = CHECKSUM.matcher(key);
            if (checksum.matches()) {
                remember(where(endpoint, bucket, checksum.group(1)),
                    Long.parseLong(checksum.group(2)), body);
            }
        } catch (RuntimeException e) {
            LOG.debug("Not remembering s3://{}/{}: {}", bucket, key, e.toString());
        }
    }

    /**
     * Whether {@link #afterCommit} in this JVM stored {@code s3://bucket/key} on {@code
     * endpoint}; answers true at most once per stored checksum (the answer is spent by Delta's
     * one write of it).
     */
    static boolean takeStoredHere(String endpoint, String bucket, String key) {
        return STORED.remove(where(endpoint, bucket, key)) != null;
    }

    /** Forgets every checksum read or stored (tests only). */
    static void resetForTests() {
        NEWEST.clear();
        STORED.clear();
    }

    /**
     * A commit created at or below the version remembered for its table means the table was
     * deleted and created again at the same path: what was remembered is another table's.
     */
    private static void forgetIfRecreated(String table, long version) {
        synchronized (NEWEST) {
            Known known = NEWEST.get(table);
            if (known != null && known.version >= version) {
                NEWEST.remove(table);
            }
        }
    }

    private static byte[] previous(ConditionalCreate create, String table, String bucket,
                                   String logDir, long version) throws IOException {
        Known known = NEWEST.get(table);
        if (known != null && known.version == version) {
            return known.bytes;
        }
        String key = checksumKey(logDir, version);
        Optional<byte[]> body = create.read(bucket, key, "read s3://" + bucket + "/" + key);
        if (!body.isPresent()) {
            return null;
        }
        remember(table, version, body.get());
        return body.get();
    }

    private static void remember(String table, long version, byte[] bytes) {
        synchronized (NEWEST) {
            Known known = NEWEST.get(table);
            if (known == null || known.version <= version) {
                NEWEST.put(table, new Known(version, bytes));
            }
        }
    }

    private static String checksumKey(String logDir, long version) {
        return logDir + String.format("%020d", version) + ".crc";
    }

    /** The memory's key of a key or prefix in a bucket on an endpoint. */
    private static String where(String endpoint, String bucket, String key) {
        return endpoint + " " + bucket + "/" + key;
    }

    private static <V> Map<String, V> lru(int size) {
        return Collections.synchronizedMap(new LinkedHashMap<String, V>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > size;
            }
        });
    }

    private static final class Known {
        final long version;
        final byte[] bytes;

        Known(long version, byte[] bytes) {
            this.version = version;
            this.bytes = bytes;
        }
    }
}
