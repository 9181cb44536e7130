package io.deltaguard.logstore;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * The write of one file by deltaguard's checkpoint file managers ({@code
 * S3PutCheckpointFileManager} for Spark 4.2, {@code S3PutCheckpointFileManagerSpark35} for Spark
 * 3.5 and 4.0): the bytes are kept in memory and stored by <b>one PUT at {@link #close}</b>,
 * instead of Spark's temp file plus rename (on S3A about 20 requests: probes, PUT, COPY, DELETE).
 *
 * <p><b>Contract</b> (Spark's {@code CheckpointFileManager.createAtomic}): the file is visible
 * with all of its bytes after {@link #close} returns, and not at all before; after
 * {@link #cancel} (or a failed close) nothing this stream wrote is visible.
 * <ul>
 *   <li>{@code overwriteIfPossible = false}: the PUT is the LogStore's conditional create
 *       ({@link S3ConditionalLogStore#write}: {@code If-None-Match: *}, read-back of an unknown
 *       outcome, the once-per-JVM fail-closed verifier). If the file exists with other bytes,
 *       close throws {@link java.nio.file.FileAlreadyExistsException}, and the existing file is
 *       never replaced. That is stronger than the rename it replaces: S3A's rename checks for
 *       the target and then copies, so two racing writers could both "win".</li>
 *   <li>{@code overwriteIfPossible = true}: one unconditional PUT; a reader sees the old or the
 *       new object, never a mix (the same argument as the LogStore's overwrites, point 6 of the
 *       {@link S3ConditionalLogStore} javadoc).</li>
 * </ul>
 * <b>Why one PUT is as atomic as the rename.</b> S3 stores a PUT's whole body or nothing, and
 * an object is visible only once its PUT completed; nothing is written before {@link #close}.
 * A cancelled or failed stream sent no request, or a PUT that S3 rejected: no temp file is left
 * behind either, unlike an interrupted rename.
 *
 * <p><b>A checksum the store already wrote.</b> For a {@code N.crc} that deltaguard's
 * conditional store itself created right after {@code N.json} in this JVM ({@link
 * CommitChecksums#takeStoredHere}), an {@code overwriteIfPossible = false} stream sends nothing at
 * close: the file exists, so the conditional create could only fail.
 *
 * <p><b>Large files.</b> A file larger than {@link LogStoreSettings#CHECKPOINT_PUT_MAX_BYTES}
 * (16 MiB by default: state-store snapshots, RocksDB archives) is not held in memory: once the
 * buffer would pass that size, the bytes so far and the rest go through {@code fallback}, the
 * rename-based stream of Spark's own file manager, with its contract and its cost.
 */
final class CheckpointPut extends OutputStream {
    /** The Spark SQL / Hadoop setting that selects a checkpoint file manager (Spark reads it
     * from the Hadoop configuration). */
    static final String MANAGER_CLASS_KEY = "spark.sql.streaming.checkpointFileManagerClass";
    /** The name every deltaguard checkpoint file manager's class starts with. */
    private static final String MANAGER_CLASS_PREFIX =
        "io.deltaguard.logstore.S3PutCheckpointFileManager";

    /** Opens Spark's own atomic stream for the same file, used past the size cap. */
    interface Fallback {
        OutputStream open() throws IOException;

        /** Cancels what {@link #open} returned. */
        void cancel(OutputStream opened);
    }

    private final S3Calls s3;
    private final String endpoint;
    private final String bucket;
    private final String key;
    private final LogStoreSettings settings;
    private final boolean overwrite;
    private final long maxBytes;
    private final Fallback fallback;
    private ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    private OutputStream fallbackStream;
    private boolean done;
    /** The file is a checksum the conditional store itself stored: close sends nothing. */
    private final boolean alreadyStored;
    /** Whether a checksum written here is remembered for the store ({@link CommitChecksums}). */
    private final boolean rememberChecksum;

    CheckpointPut(S3Calls s3, String endpoint, String bucket, String key,
                  LogStoreSettings settings, boolean overwrite, Fallback fallback) {
        this(s3, endpoint, bucket, key, settings, overwrite, fallback, false, false);
    }

    private CheckpointPut(S3Calls s3, String endpoint, String bucket, String key,
                          LogStoreSettings settings, boolean overwrite, Fallback fallback,
                          boolean alreadyStored, boolean rememberChecksum) {
        this.alreadyStored = alreadyStored;
        this.rememberChecksum = rememberChecksum;
        this.s3 = s3;
        this.endpoint = endpoint;
        this.bucket = bucket;
        this.key = key;
        this.settings = settings;
        this.overwrite = overwrite;
        this.maxBytes = settings.checkpointPutMaxBytes();
        this.fallback = fallback;
    }

    /**
     * The stream for {@code path}, or null when the path is not on S3A (the caller then uses
     * Spark's own manager unchanged).
     */
    static CheckpointPut forPath(Path path, Configuration conf, boolean overwrite,
                                 Fallback fallback) throws IOException {
        if (!S3Target.servedByS3A(path, conf)) {
            return null;
        }
        S3Target target = S3Target.resolve(path, conf);
        LogStoreSettings settings = LogStoreSettings.from(conf);
        return forKey(target.calls(), target.endpoint(), target.bucket(), target.key(), settings,
            overwrite, fallback, CommitChecksums.enabled(settings, conf));
    }

    /** The stream for a resolved key; see the class contract, "A checksum the store already
     * wrote", for when its close sends nothing. */
    static CheckpointPut forKey(S3Calls s3, String endpoint, String bucket, String key,
                                LogStoreSettings settings, boolean overwrite, Fallback fallback,
                                boolean commitChecksums) {
        return new CheckpointPut(s3, endpoint, bucket, key, settings, overwrite, fallback,
            commitChecksums && !overwrite && CommitChecksums.takeStoredHere(endpoint, bucket, key),
            commitChecksums);
    }

    /** Whether {@code conf} selects one of deltaguard's checkpoint file managers. */
    static boolean managerSelected(Configuration conf) {
        String manager = conf.getTrimmed(MANAGER_CLASS_KEY);
        return manager != null && manager.startsWith(MANAGER_CLASS_PREFIX);
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        if (done) {
            throw new IOException("Stream of s3://" + bucket + "/" + key + " is already closed");
        }
        if (fallbackStream == null && buffer.size() + (long) len > maxBytes) {
            fallbackStream = fallback.open();
            buffer.writeTo(fallbackStream);
            buffer = null;
        }
        if (fallbackStream != null) {
            fallbackStream.write(b, off, len);
        } else {
            buffer.write(b, off, len);
        }
    }

    @Override
    public void flush() throws IOException {
        if (fallbackStream != null) {
            fallbackStream.flush();
        }
    }

    /** Stores the file: one PUT (see the class contract), or closes the fallback stream. */
    @Override
    public void close() throws IOException {
        if (done) {
            return;
        }
        done = true;
        if (fallbackStream != null) {
            fallbackStream.close();
            return;
        }
        if (alreadyStored) {
            buffer = null;
            return;
        }
        byte[] body = buffer.toByteArray();
        buffer = null;
        S3ConditionalLogStore.write(s3, settings, endpoint, bucket, key, body, overwrite);
        if (rememberChecksum) {
            CommitChecksums.seen(endpoint, bucket, key, body);
        }
    }

    /** Drops the file: nothing is sent (or the fallback stream is cancelled). */
    void cancel() {
        if (done) {
            return;
        }
        done = true;
        buffer = null;
        if (fallbackStream != null) {
            fallback.cancel(fallbackStream);
        }
    }

    /**
     * Rethrows a checked exception from a method whose Scala interface declares none (Spark's
     * callers catch {@code IOException}s such as {@code FileAlreadyExistsException} by type, so
     * they must not be wrapped).
     */
    @SuppressWarnings("unchecked")
    static <T extends Throwable> T sneaky(Throwable e) throws T {
        throw (T) e;
    }
}
