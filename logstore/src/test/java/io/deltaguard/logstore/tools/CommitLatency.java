package io.deltaguard.logstore.tools;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

import io.delta.storage.LogStore;
import io.deltaguard.logstore.PlainPut;
import io.deltaguard.logstore.S3ConditionalLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Measures, in one JVM against one endpoint, the latency of committing {@code N.json} through
 * {@link S3ConditionalLogStore}, through {@code S3DynamoDBLogStore} (when a DynamoDB table is
 * configured) and of a plain PutObject of the same bytes with the same S3A client, interleaved
 * so all see the same server state. Prints one JSON object with the per-call latencies in
 * microseconds ({@code dynamodb_us} is empty without a DynamoDB table). Used by
 * {@code make bench}.
 *
 * <p>Usage: {@code CommitLatency s3a://bucket/table commits bytes} with settings passed as
 * {@code -Dfs.s3a.endpoint=...} style system properties (every {@code fs.*},
 * {@code deltaguard.*} and {@code io.delta.storage.*} system property is copied into the
 * Hadoop configuration). The DynamoDB store commits to {@code <table>-ddb}.
 */
public final class CommitLatency {
    private static final int WARMUP = 20;

    private CommitLatency() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: CommitLatency s3a://bucket/table commits bytes");
            System.exit(2);
        }
        Path table = new Path(args[0]);
        int commits = Integer.parseInt(args[1]);
        int size = Integer.parseInt(args[2]);
        Configuration conf = new Configuration();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("fs.") || name.startsWith("deltaguard.")
                || name.startsWith("io.delta.storage.")) {
                conf.set(name, System.getProperty(name));
            }
        }
        S3ConditionalLogStore store = new S3ConditionalLogStore(conf);
        boolean withDynamoDB = conf.get("io.delta.storage.S3DynamoDBLogStore.ddb.tableName") != null;
        LogStore dynamo = withDynamoDB ? dynamoDBStore(conf) : null;
        Path ddbTable = new Path(table.toString() + "-ddb");
        Path plainPrefix = new Path(table, "_plain_put");

        // Warm up connections, class loading, JIT and the one-off conditional-write probe, on
        // versions 0..WARMUP-1: the DynamoDB store (like Delta's) requires N-1 before N.
        for (int i = 0; i < WARMUP; i++) {
            store.write(commitPath(table, i), lines(size).iterator(), false, conf);
            PlainPut.put(new Path(plainPrefix, "warm-" + i), body(lines(size)), conf);
            if (dynamo != null) {
                dynamo.write(commitPath(ddbTable, i), lines(size).iterator(), false, conf);
            }
        }
        long[] logstore = new long[commits];
        long[] plain = new long[commits];
        long[] dynamodb = new long[dynamo != null ? commits : 0];
        for (int i = 0; i < commits; i++) {
            List<String> actions = lines(size);
            List<String> ddbActions = lines(size);
            byte[] bytes = body(actions);
            long t0 = System.nanoTime();
            store.write(commitPath(table, WARMUP + i), actions.iterator(), false, conf);
            long t1 = System.nanoTime();
            PlainPut.put(new Path(plainPrefix, Integer.toString(i)), bytes, conf);
            long t2 = System.nanoTime();
            logstore[i] = (t1 - t0) / 1_000;
            plain[i] = (t2 - t1) / 1_000;
            if (dynamo != null) {
                dynamo.write(commitPath(ddbTable, WARMUP + i), ddbActions.iterator(), false, conf);
                dynamodb[i] = (System.nanoTime() - t2) / 1_000;
            }
        }
        System.out.println("{\"logstore_us\": " + Arrays.toString(logstore)
            + ", \"plain_put_us\": " + Arrays.toString(plain)
            + ", \"dynamodb_us\": " + Arrays.toString(dynamodb) + "}");
        table.getFileSystem(conf).close();
    }

    /** The DynamoDB store, which only the SDK v2 jar carries. */
    private static LogStore dynamoDBStore(Configuration conf) {
        try {
            return (LogStore) Class.forName("io.deltaguard.logstore.S3DynamoDBLogStore")
                .getConstructor(Configuration.class).newInstance(conf);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("a DynamoDB table is configured, but this jar has no "
                + "S3DynamoDBLogStore (it needs the AWS SDK v2 jar): " + e, e);
        }
    }

    private static Path commitPath(Path table, long version) {
        return new Path(table, String.format("_delta_log/%020d.json", version));
    }

    /** A commit-shaped body of about {@code size} bytes, unique per call (random txnId). */
    private static List<String> lines(int size) {
        List<String> out = new ArrayList<>();
        out.add("{\"commitInfo\":{\"operation\":\"WRITE\",\"txnId\":\"" + UUID.randomUUID() + "\"}}");
        StringBuilder add = new StringBuilder("{\"add\":{\"path\":\"part-" + UUID.randomUUID() + "\",\"stats\":\"");
        while (add.length() < size - 4) {
            add.append('x');
        }
        out.add(add.append("\"}}").toString());
        return out;
    }

    private static byte[] body(List<String> actions) {
        StringBuilder b = new StringBuilder();
        for (String a : actions) {
            b.append(a).append('\n');
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }
}
