package io.deltaguard.logstore;

import java.lang.reflect.Method;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;

/**
 * The DynamoDB commit table of each bucket, for the two DynamoDB stores
 * ({@link S3DynamoDBLogStore}, {@link S3TransitionLogStore}): one SDK v2 client per bucket, built
 * from {@link DynamoDBSettings}, with S3A's credentials for that bucket unless
 * {@code credentials.provider} names others.
 */
final class DynamoDBTables {
    private static final String V1_DEFAULT_CHAIN = "com.amazonaws.auth.DefaultAWSCredentialsProviderChain";

    private final DynamoDBSettings settings;
    private final ConcurrentHashMap<String, DynamoDBCommitTable> tables = new ConcurrentHashMap<>();

    DynamoDBTables(DynamoDBSettings settings) {
        this.settings = settings;
    }

    DynamoDBSettings settings() {
        return settings;
    }

    /** The commit table serving {@code target}'s bucket. */
    DynamoDBCommitTable forTarget(S3Target target) {
        return tables.computeIfAbsent(target.bucket(), bucket -> {
            DynamoDbClientBuilder builder = DynamoDbClient.builder()
                .region(Region.of(settings.region))
                .credentialsProvider(credentials(target));
            if (settings.endpoint != null) {
                builder.endpointOverride(URI.create(settings.endpoint));
            }
            return new DynamoDBCommitTable(builder.build(), settings.tableName);
        });
    }

    /**
     * The path without user info: the form of {@code tablePath} Delta's store writes (every
     * writer of a table must name it the same way).
     */
    static Path stripUserInfo(Path path) {
        URI uri = path.toUri();
        try {
            return new Path(new URI(uri.getScheme(), null, uri.getHost(), uri.getPort(),
                uri.getPath(), uri.getQuery(), uri.getFragment()));
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(e);
        }
    }

    private AwsCredentialsProvider credentials(S3Target target) {
        String name = settings.credentialsProvider;
        if (name == null) {
            return target.fs().getS3AInternals().shareCredentials("deltaguard DynamoDB LogStore");
        }
        if (V1_DEFAULT_CHAIN.equals(name)) {
            return DefaultCredentialsProvider.builder().build();
        }
        try {
            Class<?> cls = Class.forName(name, true, Thread.currentThread().getContextClassLoader());
            try {
                Method create = cls.getMethod("create");
                return (AwsCredentialsProvider) create.invoke(null);
            } catch (NoSuchMethodException e) {
                try {
                    return (AwsCredentialsProvider) cls.getConstructor(Configuration.class)
                        .newInstance(target.fs().getConf());
                } catch (NoSuchMethodException e2) {
                    return (AwsCredentialsProvider) cls.getConstructor().newInstance();
                }
            }
        } catch (ReflectiveOperationException | ClassCastException e) {
            throw new IllegalArgumentException(DynamoDBSettings.PREFIX + "credentials.provider="
                + name + " is not a usable AWS SDK v2 AwsCredentialsProvider: " + e, e);
        }
    }
}
