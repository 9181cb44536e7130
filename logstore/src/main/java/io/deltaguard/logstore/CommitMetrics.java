package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit metrics of deltaguard's JVM stores: one call of {@link #observe} per commit, in
 * the store's write, decides the outcome from how the commit returned (normally: committed;
 * {@link FileAlreadyExistsException}: a conflict lost to another writer;
 * {@link CommitOutcomeUnknownException}: outcome unknown; anything else: failed). It changes
 * nothing about the commit: it neither catches nor alters what the commit throws.
 *
 * <p>Each commit adds to the JVM's counters (names in {@link CommitMetricsRegistry}, one set
 * for every store in the JVM) and logs one DEBUG line on this class's logger:
 * {@code deltaguard commit store=... version=... outcome=... attempts=... settles=...
 * latency_ms=... location=...}. The counters are a Spark metrics source ({@code deltaguard})
 * when the JVM runs Spark ({@link SparkMetricsRegistration}); without Dropwizard on the class
 * path (a LogStore used outside Spark) only the log line is written.
 */
final class CommitMetrics {
    private static final Logger LOG = LoggerFactory.getLogger(CommitMetrics.class);
    private static final boolean DROPWIZARD = present("com.codahale.metrics.MetricRegistry");
    private static final boolean SPARK = DROPWIZARD && present("org.apache.spark.SparkEnv");

    /** How one commit ended. */
    enum Outcome {
        COMMITTED, CONFLICT, UNKNOWN, FAILED;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * What the protocol tells the metrics while it runs: each conditional request it sends for
     * the commit ({@code PutObject} with {@code If-None-Match}, conditional {@code PutItem}),
     * and each read-back that found the commit's own bytes (a lost response settled as done).
     * Used by one thread, the committing one.
     */
    static final class Tally {
        private int attempts;
        private int settles;

        void attempt() {
            attempts++;
        }

        void settle() {
            settles++;
        }

        int attempts() {
            return attempts;
        }

        int settles() {
            return settles;
        }
    }

    /** A commit's protocol, reporting to {@code tally}. */
    interface Commit {
        void run(Tally tally) throws IOException;
    }

    private CommitMetrics() {}

    /**
     * Runs {@code commit} (the store {@code store}'s commit of {@code version} at
     * {@code location}) and records its outcome; whatever it throws is rethrown unchanged.
     */
    static void observe(String store, String location, long version, Commit commit)
            throws IOException {
        Tally tally = new Tally();
        long start = System.nanoTime();
        Outcome outcome = Outcome.FAILED;
        try {
            commit.run(tally);
            outcome = Outcome.COMMITTED;
        } catch (CommitOutcomeUnknownException e) {
            outcome = Outcome.UNKNOWN;
            throw e;
        } catch (FileAlreadyExistsException e) {
            outcome = Outcome.CONFLICT;
            throw e;
        } finally {
            record(store, location, version, outcome, tally, System.nanoTime() - start);
        }
    }

    private static void record(String store, String location, long version, Outcome outcome,
                               Tally tally, long nanos) {
        try {
            if (DROPWIZARD) {
                CommitMetricsRegistry.get().record(outcome, tally.attempts(), tally.settles(),
                    nanos);
                if (SPARK) {
                    SparkMetricsRegistration.ensureRegistered();
                }
            }
        } catch (RuntimeException | LinkageError e) {
            LOG.debug("deltaguard commit metrics not recorded", e);
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("deltaguard commit store={} version={} outcome={} attempts={} settles={} "
                    + "latency_ms={} location={}", store, version, outcome.label(),
                tally.attempts(), tally.settles(), TimeUnit.NANOSECONDS.toMillis(nanos), location);
        }
    }

    private static boolean present(String className) {
        try {
            Class.forName(className, false, CommitMetrics.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
