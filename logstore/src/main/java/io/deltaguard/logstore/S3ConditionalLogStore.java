package io.deltaguard.logstore;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import io.delta.storage.CloseableIterator;
import io.delta.storage.HadoopFileSystemLogStore;
import io.delta.storage.internal.FileNameUtils;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * A Delta LogStore for S3 that gets mutual exclusion from S3 itself: commit files are created
 * with a single {@code PutObject} carrying {@code If-None-Match: *}. Safe for any number of
 * concurrent Spark drivers (and of deltaguard's Python writers, delta-rs and Trino, which use the
 * same rule) on one table, with no lock service.
 *
 * <h2>Safety argument</h2>
 * <ol>
 *   <li><b>Mutual exclusion.</b> Delta commits version N by creating {@code _delta_log/N.json}
 *       with {@code overwrite = false}. S3 evaluates {@code If-None-Match: *} atomically with the
 *       write: of any number of concurrent creates of one key, exactly one stores its bytes; every
 *       other gets 412 PreconditionFailed (or 409 ConditionalRequestConflict). No PUT this class
 *       sends for {@code overwrite = false} lacks the header, retries included, so no writer can
 *       ever replace another's N.json.</li>
 *   <li><b>Losers retry at N+1.</b> A loser gets {@link java.nio.file.FileAlreadyExistsException},
 *       the only exception on which Delta's commit loop checks for conflicts and retries at the
 *       next version.</li>
 *   <li><b>No duplicate on a lost response.</b> When a PUT's outcome is unknown (412 after a
 *       retry, 409, 5xx, throttling, reset, timeout) the object is read back before anything else.
 *       Our own bytes mean our earlier attempt landed: the write returns normally, so Delta does
 *       not commit the same actions again at N+1. See {@link ConditionalCreate}. What the store
 *       cannot settle it never reports as a failure or a conflict: it throws
 *       {@link CommitOutcomeUnknownException}, whose message says the commit may have landed and
 *       how to check before a job retry could duplicate it.</li>
 *   <li><b>Fail closed.</b> Before the first commit to a bucket, once per JVM and endpoint, a
 *       probe checks that a second create-only PUT of one key gets 412 (see
 *       {@link ConditionalWriteVerifier}). A store that ignores the header (some S3 look-alikes
 *       answer 200 and overwrite) is refused with {@link ConditionalWritesNotHonouredException};
 *       this class never falls back to unconditional writes.</li>
 *   <li><b>Atomic visibility.</b> An S3 PUT is all-or-nothing, so
 *       {@link #isPartialWriteVisible} is false and readers never see a partial commit.</li>
 *   <li><b>One request per log file operation, no probes.</b> Nothing above needs a HEAD or a
 *       LIST: the create is one conditional PUT (S3 itself decides existence, atomically),
 *       {@link #read} is one GET (404 is {@link java.io.FileNotFoundException}, as Delta
 *       expects), {@link #listFrom} is one ListObjectsV2 per 1,000 entries ({@link S3ListFrom}).
 *       {@code overwrite = true} writes ({@code _last_checkpoint}, {@code _last_vacuum_info},
 *       manifests) are one unconditional PUT, not S3A's create (HEAD + LIST probes, then PUT)
 *       nor a temp file plus rename (COPY + DELETE): S3 stores a PUT's whole body or nothing,
 *       and a reader sees the old or the new object, never a mix, which is all that a
 *       temp-and-rename would add on a filesystem. Delta wants last-writer-wins for these files,
 *       which is what an unconditional PUT is; none of them decides a commit. Both are in
 *       {@link S3LogFiles}.</li>
 * </ol>
 *
 * <p><b>Checksums.</b> After the create of a blind append's {@code N.json} the store also
 * writes its {@code N.crc}, best effort and never affecting the commit's outcome: see {@link
 * CommitChecksums}.
 *
 * <h2>What happens on each failure</h2>
 * <ul>
 *   <li>412, another writer's bytes stored: FileAlreadyExistsException; Delta retries at N+1.</li>
 *   <li>412, our bytes stored (lost response, SDK retry): success.</li>
 *   <li>412 with nothing readable, 409, 5xx, 429/503 SlowDown, 408, reset, timeout: read back;
 *       retry the conditional PUT with jittered backoff, at most
 *       {@code deltaguard.logstore.retry.maxAttempts} times (10); then
 *       {@link CommitOutcomeUnknownException} naming the key and the last error (Delta does not
 *       retry it).</li>
 *   <li>A read-back that keeps failing (same budget): {@link CommitOutcomeUnknownException}.</li>
 *   <li>403, missing bucket, other 4xx on a PUT: a plain IOException at once.</li>
 * </ul>
 *
 * <p>Settings: S3 is configured once, through S3A ({@code fs.s3a.endpoint}, credentials,
 * {@code fs.s3a.path.style.access}, region); this class reuses S3A's own client, on the AWS SDK
 * v1 (hadoop-aws 3.3.x, the {@code -sdk1} jar) or v2 (hadoop-aws 3.4+), through
 * {@link S3Calls}: the protocol above is the same code in both jars. Its own keys
 * are in {@link LogStoreSettings}. Every writer of a table must use conditional creates (this
 * class, delta-rs, Trino with conditional writes); a writer using S3SingleDriverLogStore or the
 * DynamoDB LogStore on the same table breaks mutual exclusion.
 */
public class S3ConditionalLogStore extends HadoopFileSystemLogStore {
    private final LogStoreSettings settings;

    public S3ConditionalLogStore(Configuration initHadoopConf) {
        super(initHadoopConf);
        this.settings = LogStoreSettings.from(initHadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite,
                      Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        List<String> lines = new ArrayList<>();
        actions.forEachRemaining(lines::add);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        writeLines(lines.iterator(), body);
        Path resolved = target.qualified();
        if (overwrite || !FileNameUtils.isDeltaFile(resolved)) {
            write(target.calls(), settings, target.endpoint(), target.bucket(), target.key(),
                body.toByteArray(), overwrite, CommitMark.of(CommitMark.CONDITIONAL));
        } else {
            // a commit: its outcome, attempts and settles counted (CommitMetrics)
            CommitMetrics.observe(CommitMark.CONDITIONAL, resolved.toString(),
                FileNameUtils.deltaVersion(resolved), tally -> write(target.calls(), settings,
                    target.endpoint(), target.bucket(), target.key(), body.toByteArray(), false,
                    CommitMark.of(CommitMark.CONDITIONAL), tally));
        }
        if (!overwrite && CommitChecksums.enabled(settings, hadoopConf)) {
            CommitChecksums.afterCommit(conditionalCreate(target.calls(), settings),
                target.endpoint(), target.bucket(), target.key(), lines);
        }
    }

    /** {@link #write(S3Calls, LogStoreSettings, String, String, String, byte[], boolean, Map)}
     *  without a mark (files that are not commits: checkpoints). */
    static void write(S3Calls s3, LogStoreSettings settings, String endpoint, String bucket,
                      String key, byte[] body, boolean overwrite) throws IOException {
        write(s3, settings, endpoint, bucket, key, body, overwrite,
            java.util.Collections.<String, String>emptyMap());
    }

    /**
     * {@link #write} on a resolved key: with {@code overwrite} one unconditional PUT, else
     * (after the once-per-JVM verification) the conditional create, whose PUTs carry the user
     * metadata {@code mark} (the store's {@link CommitMark}). Sends nothing else.
     */
    static void write(S3Calls s3, LogStoreSettings settings, String endpoint, String bucket,
                      String key, byte[] body, boolean overwrite, Map<String, String> mark)
            throws IOException {
        write(s3, settings, endpoint, bucket, key, body, overwrite, mark,
            new CommitMetrics.Tally());
    }

    /** {@link #write(S3Calls, LogStoreSettings, String, String, String, byte[], boolean, Map)}
     *  whose conditional create reports its PUTs and settles to {@code tally}. */
    static void write(S3Calls s3, LogStoreSettings settings, String endpoint, String bucket,
                      String key, byte[] body, boolean overwrite, Map<String, String> mark,
                      CommitMetrics.Tally tally) throws IOException {
        if (overwrite) {
            S3LogFiles.overwrite(s3, bucket, key, body);
            return;
        }
        ConditionalCreate create = conditionalCreate(s3, settings);
        if (settings.verifyConditionalWrites()) {
            int slash = key.lastIndexOf('/');
            ConditionalWriteVerifier.ensureVerified(s3, endpoint, bucket,
                slash < 0 ? "" : key.substring(0, slash), create);
        }
        create.marking(mark).tallying(tally).create(bucket, key, body);
    }

    static ConditionalCreate conditionalCreate(S3Calls s3, LogStoreSettings settings) {
        return new ConditionalCreate(s3, settings.maxAttempts(),
            new Backoff(settings.baseDelayMs(), settings.maxDelayMs()));
    }

    /**
     * One GET of the whole file (see point 6 above), not S3A's HEAD + GET. A checksum read is
     * remembered for {@link CommitChecksums}.
     */
    @Override
    public CloseableIterator<String> read(Path path, Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        byte[] body = S3LogFiles.readBytes(conditionalCreate(target.calls(), settings),
            target.bucket(), target.key());
        if (CommitChecksums.enabled(settings, hadoopConf)) {
            CommitChecksums.seen(target.endpoint(), target.bucket(), target.key(), body);
        }
        return S3LogFiles.lines(body);
    }

    /** Each action followed by a newline, UTF-8, as every Delta LogStore writes them. */
    static void writeLines(Iterator<String> actions, OutputStream out) throws IOException {
        while (actions.hasNext()) {
            out.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        return S3ListFrom.listFrom(S3Target.resolve(path, hadoopConf));
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;
    }
}
