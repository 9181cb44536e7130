package io.deltaguard.logstore;

import com.codahale.metrics.MetricRegistry;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;

/**
 * Registers the commit metrics ({@link CommitMetricsRegistry}) as the Spark metrics source
 * {@code deltaguard} with the running SparkEnv's metrics system, once per SparkEnv (a JVM that
 * stops its SparkContext and starts another registers with the new one). No SparkEnv (unit
 * tests, a LogStore used outside Spark): nothing. A source registered after the metrics system
 * started is reported by every sink: the servlets (JSON, Prometheus) and the CSV/console
 * reporters read the whole registry on each report, JMX follows registrations.
 * Loaded only when Spark is on the class path ({@link CommitMetrics}).
 */
final class SparkMetricsRegistration implements Source {
    static final String SOURCE_NAME = "deltaguard";
    private static final Object LOCK = new Object();
    private static SparkEnv registeredWith;

    private SparkMetricsRegistration() {}

    @Override
    public String sourceName() {
        return SOURCE_NAME;
    }

    @Override
    public MetricRegistry metricRegistry() {
        return CommitMetricsRegistry.get().registry();
    }

    static void ensureRegistered() {
        SparkEnv env = SparkEnv.get();
        if (env == null) {
            return;
        }
        synchronized (LOCK) {
            if (env == registeredWith) {
                return;
            }
            registeredWith = env;
        }
        env.metricsSystem().registerSource(new SparkMetricsRegistration());
    }
}
