package io.deltaguard.logstore;

import org.apache.hadoop.conf.Configuration;

/**
 * The settings of deltaguard's LogStores, read from the Hadoop configuration.
 *
 * <p>Every key is read under the prefix {@code deltaguard.logstore.} and, because Spark copies
 * SQL confs verbatim into the Hadoop configuration, also under {@code spark.deltaguard.logstore.}.
 * If both are set to different values the configuration is rejected, as Delta does for its own
 * {@code spark.}-prefixed LogStore keys.
 */
public final class LogStoreSettings {
    public static final String PREFIX = "deltaguard.logstore.";
    public static final String SPARK_PREFIX = "spark." + PREFIX;

    /** Fail closed: probe each (endpoint, bucket) for working If-None-Match before committing. */
    public static final String VERIFY_CONDITIONAL_WRITES = "verifyConditionalWrites";
    /** Attempts for one conditional create (first try included) before giving up. */
    public static final String MAX_ATTEMPTS = "retry.maxAttempts";
    /** Base delay of the jittered exponential backoff between attempts, in milliseconds. */
    public static final String BASE_DELAY_MS = "retry.baseDelayMs";
    /** Cap of a single backoff delay, in milliseconds. */
    public static final String MAX_DELAY_MS = "retry.maxDelayMs";

    /**
     * The largest file deltaguard's checkpoint file managers write with one PUT from memory
     * (bytes, default 16 MiB); larger ones go through Spark's temp file plus rename
     * ({@link CheckpointPut}).
     */
    public static final String CHECKPOINT_PUT_MAX_BYTES = "checkpoint.putMaxBytes";

    /**
     * Whether the conditional store writes a blind append's {@code N.crc} right after its
     * {@code N.json} (default true; also off whenever Delta's {@code
     * spark.databricks.delta.writeChecksumFile.enabled} is false). See {@link CommitChecksums}.
     */
    public static final String COMMIT_CHECKSUMS = "commitChecksums";

    /**
     * Whether deltaguard's checkpoint file managers answer {@code exists} on S3 with one LIST
     * (default true) instead of S3A's HEAD plus LIST. See {@link CheckpointExists}.
     */
    public static final String CHECKPOINT_LIST_EXISTS = "checkpoint.listExists";

    private final boolean verifyConditionalWrites;
    private final boolean commitChecksums;
    private final int maxAttempts;
    private final long baseDelayMs;
    private final long maxDelayMs;
    private final long checkpointPutMaxBytes;
    private final boolean checkpointListExists;

    private LogStoreSettings(boolean verify, int maxAttempts, long baseDelayMs, long maxDelayMs,
                             long checkpointPutMaxBytes, boolean commitChecksums,
                             boolean checkpointListExists) {
        this.checkpointListExists = checkpointListExists;
        this.verifyConditionalWrites = verify;
        this.commitChecksums = commitChecksums;
        this.maxAttempts = maxAttempts;
        this.baseDelayMs = baseDelayMs;
        this.maxDelayMs = maxDelayMs;
        this.checkpointPutMaxBytes = checkpointPutMaxBytes;
    }

    /**
     * Reads the settings.
     *
     * @throws IllegalArgumentException if a value is malformed, out of range, or set differently
     *     under the two prefixes; the message names the key.
     */
    public static LogStoreSettings from(Configuration conf) {
        int maxAttempts = (int) positive(conf, MAX_ATTEMPTS, 10);
        long base = positive(conf, BASE_DELAY_MS, 50);
        long max = positive(conf, MAX_DELAY_MS, 5_000);
        if (max < base) {
            throw new IllegalArgumentException(
                PREFIX + MAX_DELAY_MS + " (" + max + ") must be >= " + PREFIX + BASE_DELAY_MS
                    + " (" + base + ")");
        }
        long putMax = positive(conf, CHECKPOINT_PUT_MAX_BYTES, 16L << 20);
        if (putMax > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(PREFIX + CHECKPOINT_PUT_MAX_BYTES
                + " must be below 2 GiB (the bytes are held in memory), got " + putMax);
        }
        boolean checksums = bool(conf, COMMIT_CHECKSUMS, true);
        return new LogStoreSettings(bool(conf, VERIFY_CONDITIONAL_WRITES, true), maxAttempts, base,
            max, putMax, checksums, bool(conf, CHECKPOINT_LIST_EXISTS, true));
    }

    /** The full key a user sets, for error messages. */
    public static String key(String name) {
        return PREFIX + name;
    }

    static String get(Configuration conf, String name, String dflt) {
        String plain = conf.getTrimmed(PREFIX + name);
        String spark = conf.getTrimmed(SPARK_PREFIX + name);
        if (plain != null && spark != null && !plain.equals(spark)) {
            throw new IllegalArgumentException(
                "Conflicting settings: " + PREFIX + name + "=" + plain + " but " + SPARK_PREFIX
                    + name + "=" + spark);
        }
        if (plain != null) {
            return plain;
        }
        return spark != null ? spark : dflt;
    }

    private static boolean bool(Configuration conf, String name, boolean dflt) {
        String raw = get(conf, name, Boolean.toString(dflt));
        if (!raw.equalsIgnoreCase("true") && !raw.equalsIgnoreCase("false")) {
            throw new IllegalArgumentException(PREFIX + name + " must be true or false, got '"
                + raw + "'");
        }
        return Boolean.parseBoolean(raw);
    }

    private static long positive(Configuration conf, String name, long dflt) {
        String raw = get(conf, name, Long.toString(dflt));
        long value;
        try {
            value = Long.parseLong(raw);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(PREFIX + name + " must be an integer, got '" + raw + "'");
        }
        if (value < 1) {
            throw new IllegalArgumentException(PREFIX + name + " must be >= 1, got " + value);
        }
        return value;
    }

    public boolean verifyConditionalWrites() {
        return verifyConditionalWrites;
    }

    public boolean commitChecksums() {
        return commitChecksums;
    }

    public boolean checkpointListExists() {
        return checkpointListExists;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public long baseDelayMs() {
        return baseDelayMs;
    }

    public long maxDelayMs() {
        return maxDelayMs;
    }

    public long checkpointPutMaxBytes() {
        return checkpointPutMaxBytes;
    }
}
