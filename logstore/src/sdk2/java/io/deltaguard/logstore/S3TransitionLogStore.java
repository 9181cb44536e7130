package io.deltaguard.logstore;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Iterator;

import io.delta.storage.CloseableIterator;
import io.delta.storage.HadoopFileSystemLogStore;
import io.delta.storage.internal.FileNameUtils;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * The LogStore that moves a live table from Delta's DynamoDB protocol to conditional writes
 * without stopping a writer (preset {@code s3-dynamodb-transition}; runbook: docs/guides/migration.md).
 * It speaks the DynamoDB protocol exactly as {@link S3DynamoDBLogStore} and Delta's
 * {@code S3DynamoDBLogStore} do (same table, item schema, temp file, conditional PutItem, copy,
 * recovery), except that N.json is only ever created with {@code If-None-Match: *} through
 * {@link ConditionalCreate} (settled by read-back), and its entries carry
 * {@link CommitEntry#MARKER_ATTRIBUTE} so {@code deltaguard migrate status} can tell who writes.
 * The steps are in {@link TransitionCommit}.
 *
 * <h2>Protocol for {@code _delta_log/N.json}, overwrite = false</h2>
 * <ol>
 *   <li>S0: N.json exists: {@code FileAlreadyExistsException} (FAEE).</li>
 *   <li>S1: N &gt; 0: an incomplete entry for N-1 is repaired (R below); otherwise N-1.json
 *       must exist.</li>
 *   <li>S2: write the temp file T(N) (plain PUT of a fresh {@code .tmp/N.json.<uuid>}).</li>
 *   <li>S3: PutItem (tablePath, N.json, T(N), complete=false, marker) with
 *       {@code attribute_not_exists(fileName)}, settled by reading the entry back
 *       ({@link DynamoDBCommitTable#claim}): another writer's entry is FAEE; unsettled is
 *       {@link CommitOutcomeUnknownException}.</li>
 *   <li>S4: create N.json with T(N)'s bytes by conditional create. Our bytes stored (now or by an
 *       earlier lost-response attempt, or by a repairer): success. Another writer's bytes: mark
 *       our entry complete, then FAEE, so Delta retries at N+1. Unsettled, or any other error:
 *       {@link CommitOutcomeUnknownException} (our entry holds N; N.json may get our bytes from
 *       a repairer, or another writer's).</li>
 *   <li>S5: mark the entry complete ({@code expireTime = now + ttl}); a failure here is logged,
 *       the commit is already visible.</li>
 *   <li>R (repair, by S1 of the next writer and by every {@link #listFrom} of the log, for the
 *       newest entry): conditional create of N.json from T(N); our or another's bytes there,
 *       mark the entry complete.</li>
 * </ol>
 * It returns success only once N.json holds its own bytes (S4's contract, {@link ConditionalCreate}).
 *
 * <h2>Safety argument</h2>
 * Writer kinds: P = plain DynamoDB protocol (Delta's store and {@link S3DynamoDBLogStore}:
 * PutItem, then a copy that checks existence and then PUTs without a condition), T = this store,
 * C = conditional only (our {@link S3ConditionalLogStore}, delta-rs &gt;= 1.6.1, Trino: one
 * {@code If-None-Match} PUT of N.json, DynamoDB ignored). "Safe" means: no reported commit is
 * ever replaced or lost, and no commit is reported twice.
 * <ol>
 *   <li><b>T with T.</b> DynamoDB's PutItem condition admits one entry per N; a T writer writes N.json
 *       only after its own entry holds N (S4) or as a repairer of the entry holding N (R), so
 *       every N.json creation of N carries that entry's T(N) bytes, and each is conditional
 *       anyway: no overwrite is possible.</li>
 *   <li><b>T with P (phase 1).</b> The PutItem decides N for both, exactly as between two P
 *       writers. A P writer's unconditional copy of N.json happens only for the entry holding N,
 *       so it writes the same bytes any T writer would create; no C writer exists to race it.
 *       P readers repair T's incomplete entries by copying T(N), which is the entry owner's
 *       commit: the result is the one Delta's protocol defines. P rewrites a repaired entry
 *       without the marker, which {@code migrate status} then reports as a P client still
 *       running (true).</li>
 *   <li><b>T with C (phase 2).</b> C ignores DynamoDB, so N is decided by who creates N.json
 *       first, and both create only with {@code If-None-Match: *}: at most one N.json per N,
 *       never replaced. T reports success only when N.json holds its bytes (S4, settled by
 *       read-back, so a lost response is neither a loss nor a duplicate); a T writer whose entry
 *       holds N but whose N.json is C's marks the entry complete and gets FAEE, so Delta checks
 *       conflicts and retries at N+1 (S1 then finds N.json). A C commit of N leaves no entry; T's
 *       S1 for N+1 finds N.json. A gap cannot arise: C creates N only after N-1.json exists.</li>
 *   <li><b>P with C: unsafe, whatever T does.</b> P's copy checks that N.json is absent and then
 *       PUTs without a condition; a C commit of N between the two is overwritten. P readers
 *       repairing an entry do the same. So phase 2 (C writers) may start only once no P client
 *       (writer or reader) runs: the runbook's window on unmarked entries.</li>
 * </ol>
 *
 * <h2>Crash points (a T writer killed)</h2>
 * <ul>
 *   <li><b>After the temp file (S2), before the PutItem:</b> no entry, no N.json; the temp file
 *       is an orphan ({@code deltaguard orphans} class {@code log-temp}). Nothing was reported.</li>
 *   <li><b>After the PutItem (S3), before S4:</b> an incomplete entry holds N. Next T or P writer
 *       (S1) or any T/P listing repairs it: N.json gets T(N) (the dead writer's commit lands,
 *       as Delta's protocol defines) unless a C writer created N.json first, in which case the
 *       entry is marked complete and nothing is overwritten. The dead writer reported nothing,
 *       so neither outcome is a loss or a duplicate.</li>
 *   <li><b>During the copy (S4):</b> the conditional PUT landed or did not; repair settles it as
 *       above (its conditional create finds our bytes: done; absent: creates them; another's:
 *       left alone).</li>
 *   <li><b>Before the entry is completed (S5):</b> N.json holds our bytes; repair finds them and
 *       marks the entry complete.</li>
 *   <li><b>Recovery by another reader:</b> T and P listings repair the newest incomplete entry;
 *       C readers never repair, but C writers of N create N.json themselves (and win or lose
 *       conditionally), so an incomplete entry never hides a version from them.</li>
 * </ul>
 *
 * <p>Runs on the AWS SDK v2 jar only, like {@link S3DynamoDBLogStore}: the SDK v1 line
 * (hadoop-aws 3.3.x) has no DynamoDB client on Spark's classpath (Delta's store brings its own
 * SDK v1 jars, out of support since 2025-12-31), and adding one would put a second SDK next to
 * S3A's. Settings: {@link DynamoDBSettings} (same keys as Delta's store) and
 * {@link LogStoreSettings} (retries, the once-per-JVM check that the endpoint honours
 * {@code If-None-Match}).
 */
public class S3TransitionLogStore extends HadoopFileSystemLogStore {
    private final LogStoreSettings settings;
    private final DynamoDBTables tables;

    public S3TransitionLogStore(Configuration initHadoopConf) {
        super(initHadoopConf);
        this.settings = LogStoreSettings.from(initHadoopConf);
        this.tables = new DynamoDBTables(DynamoDBSettings.from(initHadoopConf));
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite,
                      Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        S3ConditionalLogStore.writeLines(actions, body);
        Path resolved = DynamoDBTables.stripUserInfo(target.qualified());
        if (overwrite || !FileNameUtils.isDeltaFile(resolved)) {
            // not a commit: what the conditional store does (plain PUT, or conditional create)
            S3ConditionalLogStore.write(target.calls(), settings, target.endpoint(),
                target.bucket(), target.key(), body.toByteArray(), overwrite,
                CommitMark.of(CommitMark.TRANSITION));
            return;
        }
        ConditionalCreate create = S3ConditionalLogStore.conditionalCreate(target.calls(), settings);
        String key = target.key();
        String logDirKey = key.substring(0, key.lastIndexOf('/'));
        if (settings.verifyConditionalWrites()) {
            ConditionalWriteVerifier.ensureVerified(target.calls(), target.endpoint(),
                target.bucket(), logDirKey, create);
        }
        long version = FileNameUtils.deltaVersion(resolved);
        CommitMetrics.observe(CommitMark.TRANSITION, resolved.toString(), version,
            tally -> commit(target, create.tallying(tally)).commit(target.bucket(), logDirKey,
                resolved.getParent().getParent().toString(), resolved.getName(), version,
                body.toByteArray(), tally));
    }

    private TransitionCommit commit(S3Target target, ConditionalCreate create) {
        return new TransitionCommit(target.calls(),
            create.marking(CommitMark.of(CommitMark.TRANSITION)), tables.forTarget(target),
            tables.settings().ttlSeconds);
    }

    @Override
    public CloseableIterator<String> read(Path path, Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        return S3LogFiles.read(S3ConditionalLogStore.conditionalCreate(target.calls(), settings),
            target.bucket(), target.key());
    }

    /** Repairs the table's newest entry if incomplete (R above), then lists. */
    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        Path resolved = DynamoDBTables.stripUserInfo(target.qualified());
        if ("_delta_log".equals(resolved.getParent().getName())) {
            String key = target.key();
            commit(target, S3ConditionalLogStore.conditionalCreate(target.calls(), settings))
                .repairLatest(target.bucket(), key.substring(0, key.lastIndexOf('/')),
                    resolved.getParent().getParent().toString());
        }
        return S3ListFrom.listFrom(target);
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;
    }
}
