package io.deltaguard.logstore;

import org.apache.hadoop.conf.Configuration;

/**
 * Settings of {@link S3DynamoDBLogStore}, under the same keys as Delta's S3DynamoDBLogStore so
 * existing configurations keep working: prefix {@code io.delta.storage.S3DynamoDBLogStore.},
 * also read with a {@code spark.} prefix (values set differently under both are rejected).
 *
 * <ul>
 *   <li>{@code ddb.tableName} (default {@code delta_log}), {@code ddb.region} (default
 *       {@code us-east-1}): must be the same for every writer of a table.</li>
 *   <li>{@code ddb.endpoint}: deltaguard's addition, an endpoint override (DynamoDB Local,
 *       LocalStack, VPC endpoints); Delta's store has none.</li>
 *   <li>{@code ddb.ttl}: seconds a completed entry is kept (default 86400; negative rejected).
 *       Too low a value can lose data: the entry must outlive every reader's view of the
 *       commit it protects.</li>
 *   <li>{@code credentials.provider}: an SDK v2 {@code AwsCredentialsProvider} class. Unset, the
 *       store uses S3A's credentials for the same bucket, so S3 and DynamoDB are configured
 *       once. Delta's SDK v1 default chain name is mapped to the SDK v2 default chain.</li>
 * </ul>
 */
final class DynamoDBSettings {
    static final String PREFIX = "io.delta.storage.S3DynamoDBLogStore.";

    final String tableName;
    final String region;
    final String endpoint;
    final long ttlSeconds;
    final String credentialsProvider;

    private DynamoDBSettings(String tableName, String region, String endpoint, long ttlSeconds,
                             String credentialsProvider) {
        this.tableName = tableName;
        this.region = region;
        this.endpoint = endpoint;
        this.ttlSeconds = ttlSeconds;
        this.credentialsProvider = credentialsProvider;
    }

    static DynamoDBSettings from(Configuration conf) {
        String ttl = get(conf, "ddb.ttl", "86400");
        long ttlSeconds;
        try {
            ttlSeconds = Long.parseLong(ttl.replaceAll("(?i)\\s*(s|sec|seconds)$", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(PREFIX + "ddb.ttl must be seconds, got '" + ttl + "'");
        }
        if (ttlSeconds < 0) {
            throw new IllegalArgumentException(PREFIX + "ddb.ttl must be >= 0, got " + ttlSeconds);
        }
        return new DynamoDBSettings(get(conf, "ddb.tableName", "delta_log"),
            get(conf, "ddb.region", "us-east-1"), get(conf, "ddb.endpoint", null), ttlSeconds,
            get(conf, "credentials.provider", null));
    }

    private static String get(Configuration conf, String name, String dflt) {
        String plain = conf.getTrimmed(PREFIX + name);
        String spark = conf.getTrimmed("spark." + PREFIX + name);
        if (plain != null && spark != null && !plain.equals(spark)) {
            throw new IllegalArgumentException("Conflicting settings: " + PREFIX + name + "="
                + plain + " but spark." + PREFIX + name + "=" + spark);
        }
        if (plain != null) {
            return plain;
        }
        return spark != null ? spark : dflt;
    }
}
