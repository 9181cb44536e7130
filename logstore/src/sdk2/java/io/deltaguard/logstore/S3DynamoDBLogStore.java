package io.deltaguard.logstore;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.util.Iterator;
import java.util.Optional;
import java.util.UUID;

import io.delta.storage.HadoopFileSystemLogStore;
import io.delta.storage.internal.FileNameUtils;
import io.delta.storage.internal.PathLock;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Delta LogStore for S3 stores without working conditional writes: mutual exclusion comes from
 * a conditional PutItem in DynamoDB. It follows exactly the protocol and item schema of Delta's
 * {@code io.delta.storage.S3DynamoDBLogStore} (see {@link CommitEntry}), so Delta's store and
 * this one can write the same table through the same DynamoDB table at the same time. It runs on
 * the AWS SDK v2 already on Spark's classpath (Delta's needs SDK v1 jars that hadoop-aws no
 * longer ships) and takes an endpoint override ({@code ddb.endpoint}).
 *
 * <h2>Protocol for {@code _delta_log/N.json}, overwrite = false</h2>
 * <ol>
 *   <li>Step 0: if N.json exists, {@code FileAlreadyExistsException}.</li>
 *   <li>Step 1: if N &gt; 0, the entry for N-1 must be complete (an incomplete one is repaired
 *       first, see below) or N-1.json must exist; otherwise {@code FileSystemException}.</li>
 *   <li>Step 2.1: write the actions to the temp file T(N) = {@code _delta_log/.tmp/N.json.<uuid>}.</li>
 *   <li>Step 2.2 (the commit point): create the entry (tablePath, N.json, T(N), complete=false)
 *       with {@code attribute_not_exists(fileName)}. Exactly one writer succeeds; the others get
 *       {@code FileAlreadyExistsException} and Delta retries them at N+1. If the PutItem's
 *       response was lost and the SDK's retry fails the condition against our own entry, the
 *       entry is read back: our T(N) there means the commit is ours (Delta's store would report
 *       a conflict here and commit the same actions again at N+1). See
 *       {@link DynamoDBCommitTable#claim}.</li>
 *   <li>Step 3: copy T(N) to N.json. Step 4: mark the entry complete with
 *       {@code expireTime = now + ttl}. Failures in 3 and 4 are logged and left to recovery: the
 *       commit already happened at step 2.2.</li>
 * </ol>
 *
 * <h2>Recovery</h2>
 * A writer killed between 2.2 and 3 leaves an incomplete entry whose N.json is missing. The next
 * writer of N+1 (step 1) and every {@code listFrom} of the log (which checks the table's newest
 * entry) copy T(N) to N.json if absent and mark the entry complete, so the commit becomes
 * visible and nothing is lost.
 *
 * <p>The DynamoDB table must exist ({@code deltaguard dynamodb create-table}); it is not created
 * implicitly, because a mistyped table name would silently split writers. Every writer of a table
 * must use this protocol with the same table and region; a conditional-write writer on the same
 * table would bypass DynamoDB (step 3 is not atomic against a conditional PUT). To move a live
 * table to conditional writes, see {@link S3TransitionLogStore} and docs/guides/migration.md.
 */
public class S3DynamoDBLogStore extends HadoopFileSystemLogStore {
    private static final Logger LOG = LoggerFactory.getLogger(S3DynamoDBLogStore.class);
    private static final PathLock PATH_LOCK = new PathLock();
    /** S3A's prefix of create options that become the object's user metadata. */
    private static final String CREATE_HEADER = "fs.s3a.create.header.";

    private final DynamoDBSettings settings;
    private final LogStoreSettings retries;
    private final DynamoDBTables tables;

    public S3DynamoDBLogStore(Configuration initHadoopConf) {
        super(initHadoopConf);
        this.settings = DynamoDBSettings.from(initHadoopConf);
        this.retries = LogStoreSettings.from(initHadoopConf);
        this.tables = new DynamoDBTables(settings);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite,
                      Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        FileSystem fs = target.fs();
        Path resolved = stripUserInfo(target.qualified());
        try {
            PATH_LOCK.acquire(resolved);
            try {
                if (overwrite) {
                    try (OutputStream out = fs.create(resolved, true)) {
                        S3ConditionalLogStore.writeLines(actions, out);
                    }
                    return;
                }
                if (FileNameUtils.isDeltaFile(resolved)) {
                    CommitMetrics.observe(CommitMark.DYNAMODB, resolved.toString(),
                        FileNameUtils.deltaVersion(resolved),
                        tally -> commit(target, resolved, actions, tally));
                } else {
                    commit(target, resolved, actions, new CommitMetrics.Tally());
                }
            } finally {
                PATH_LOCK.release(resolved);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(e.getMessage());
        }
    }

    private void commit(S3Target target, Path resolved, Iterator<String> actions,
                        CommitMetrics.Tally tally) throws IOException {
        FileSystem fs = target.fs();
        if (fs.exists(resolved)) {
            throw new FileAlreadyExistsException(resolved.toString());
        }
        DynamoDBCommitTable table = table(target);
        String tablePath = resolved.getParent().getParent().toString();
        String fileName = resolved.getName();
        if (FileNameUtils.isDeltaFile(resolved)) {
            long version = FileNameUtils.deltaVersion(resolved);
            if (version > 0) {
                Path prev = FileNameUtils.deltaFile(resolved.getParent(), version - 1);
                Optional<CommitEntry> prevEntry = table.get(tablePath, prev.getName());
                if (prevEntry.isPresent() && !prevEntry.get().complete()) {
                    repair(fs, table, prevEntry.get());
                } else if (!fs.exists(prev)) {
                    throw new FileSystemException("previous commit " + prev + " doesn't exist on the "
                        + "file system but does in the external log store");
                }
            } else {
                Optional<CommitEntry> entry = table.get(tablePath, fileName);
                if (entry.isPresent() && entry.get().complete() && !fs.exists(resolved)) {
                    throw new FileSystemException("Old entries for table " + tablePath
                        + " still exist in the external log store");
                }
            }
        }
        CommitEntry entry = new CommitEntry(tablePath, fileName,
            ".tmp/" + fileName + "." + UUID.randomUUID(), false, null);
        try (OutputStream out = fs.create(entry.absoluteTempPath(), true)) {
            S3ConditionalLogStore.writeLines(actions, out);
        }
        table.claim(entry, retries.maxAttempts(),
            new Backoff(retries.baseDelayMs(), retries.maxDelayMs()), tally);
        try {
            copy(fs, entry.absoluteTempPath(), resolved);
            table.put(entry.asComplete(settings.ttlSeconds), true);
        } catch (IOException | RuntimeException e) {
            LOG.info("{}: ignoring recoverable error after the commit point of {}",
                e.getClass().getSimpleName(), resolved, e);
        }
    }

    /** Copies T(N) to N.json if absent and marks the entry complete; bounded retries. */
    private void repair(FileSystem fs, DynamoDBCommitTable table, CommitEntry entry) throws IOException {
        Path target = entry.absoluteFilePath();
        try {
            PATH_LOCK.acquire(target);
            boolean copied = false;
            for (int attempt = 0; ; attempt++) {
                try {
                    if (!copied && !fs.exists(target)) {
                        copy(fs, entry.absoluteTempPath(), target);
                    }
                    copied = true;
                    table.put(entry.asComplete(settings.ttlSeconds), true);
                    LOG.info("repaired {}: copied its temp file and marked it complete", target);
                    return;
                } catch (FileAlreadyExistsException e) {
                    copied = true; // another repairer copied it; still mark the entry complete
                } catch (IOException e) {
                    if (attempt >= 3) {
                        throw e;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(e.getMessage());
        } finally {
            PATH_LOCK.release(target);
        }
    }

    /**
     * Copies {@code src} to {@code dst} through S3A's create (existence check, then a plain
     * PUT, as Delta's store does); the PUT carries the {@link CommitMark} as user metadata
     * through S3A's {@code fs.s3a.create.header.} option (hadoop-aws 3.4+: the SDK v2 jar).
     */
    private static void copy(FileSystem fs, Path src, Path dst) throws IOException {
        try (InputStream in = fs.open(src);
             OutputStream out = (OutputStream) fs.createFile(dst).overwrite(false)
                 .opt(CREATE_HEADER + CommitMark.KEY, CommitMark.value(CommitMark.DYNAMODB))
                 .build()) {
            byte[] buffer = new byte[8192];
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                out.write(buffer, 0, n);
            }
        } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
            throw new FileAlreadyExistsException(dst.toString());
        }
    }

    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        Path resolved = stripUserInfo(target.qualified());
        if ("_delta_log".equals(resolved.getParent().getName())) {
            DynamoDBCommitTable table = table(target);
            Optional<CommitEntry> latest = table.latest(resolved.getParent().getParent().toString());
            if (latest.isPresent() && !latest.get().complete()) {
                repair(target.fs(), table, latest.get());
            }
        }
        return S3ListFrom.listFrom(target);
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;
    }

    private DynamoDBCommitTable table(S3Target target) {
        return tables.forTarget(target);
    }

    private static Path stripUserInfo(Path path) {
        return DynamoDBTables.stripUserInfo(path);
    }
}
