package io.deltaguard.logstore;

import java.util.concurrent.TimeUnit;

import com.codahale.metrics.Counter;
import com.codahale.metrics.MetricRegistry;
import com.codahale.metrics.Timer;

/**
 * The JVM's one Dropwizard registry of commit metrics, what the Spark source {@code deltaguard}
 * reports ({@link SparkMetricsRegistration}). Names (also the Python stores' counter names,
 * {@code deltaguard.logstore.commit_metrics}); docs/guides/commit-path.md ("Metrics") lists
 * them as a Prometheus scrape shows them:
 * <ul>
 *   <li>{@code commits}: commits that landed (N.json holds the commit's bytes);</li>
 *   <li>{@code conflicts}: commits lost to another writer (412, ConditionalCheckFailed, or N.json
 *       already there): Delta retries them at N+1;</li>
 *   <li>{@code outcomes_unknown}: commits ended with {@link CommitOutcomeUnknownException};</li>
 *   <li>{@code failures}: commits ended with another error (nothing committed);</li>
 *   <li>{@code attempts}: conditional requests sent for commits (PUTs with If-None-Match,
 *       conditional PutItems), retries included;</li>
 *   <li>{@code settles}: read-backs that found the commit's own bytes after a lost
 *       response;</li>
 *   <li>{@code commit_latency}: a timer of every commit's duration, whatever its outcome.</li>
 * </ul>
 */
final class CommitMetricsRegistry {
    static final String COMMITS = "commits";
    static final String CONFLICTS = "conflicts";
    static final String OUTCOMES_UNKNOWN = "outcomes_unknown";
    static final String FAILURES = "failures";
    static final String ATTEMPTS = "attempts";
    static final String SETTLES = "settles";
    static final String LATENCY = "commit_latency";

    private static final CommitMetricsRegistry INSTANCE = new CommitMetricsRegistry();

    private final MetricRegistry registry = new MetricRegistry();
    private final Counter commits = registry.counter(COMMITS);
    private final Counter conflicts = registry.counter(CONFLICTS);
    private final Counter unknown = registry.counter(OUTCOMES_UNKNOWN);
    private final Counter failures = registry.counter(FAILURES);
    private final Counter attempts = registry.counter(ATTEMPTS);
    private final Counter settles = registry.counter(SETTLES);
    private final Timer latency = registry.timer(LATENCY);

    private CommitMetricsRegistry() {}

    static CommitMetricsRegistry get() {
        return INSTANCE;
    }

    MetricRegistry registry() {
        return registry;
    }

    void record(CommitMetrics.Outcome outcome, int attemptCount, int settleCount, long nanos) {
        switch (outcome) {
            case COMMITTED:
                commits.inc();
                break;
            case CONFLICT:
                conflicts.inc();
                break;
            case UNKNOWN:
                unknown.inc();
                break;
            default:
                failures.inc();
                break;
        }
        attempts.inc(attemptCount);
        settles.inc(settleCount);
        latency.update(nanos, TimeUnit.NANOSECONDS);
    }
}
