package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.QueryRequest;
import software.amazon.awssdk.services.dynamodb.model.ResourceNotFoundException;

/**
 * The DynamoDB commit table, item for item as Delta's S3DynamoDBLogStore reads and writes it.
 *
 * <p>{@link #put} with {@code overwrite = false} is a PutItem conditioned on
 * {@code attribute_not_exists(fileName)}: DynamoDB evaluates it atomically, so exactly one writer
 * creates the entry for (tablePath, N.json). That PutItem is the commit point; {@link #claim}
 * is how both DynamoDB stores send it.
 */
final class DynamoDBCommitTable {
    /** The table does not exist: never retried, never created implicitly. */
    static final class MissingTableException extends IOException {
        private static final long serialVersionUID = 1L;

        MissingTableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final DynamoDbClient client;
    private final String tableName;

    DynamoDBCommitTable(DynamoDbClient client, String tableName) {
        this.client = client;
        this.tableName = tableName;
    }

    String tableName() {
        return tableName;
    }

    /**
     * Writes the entry. With {@code overwrite = false} it fails with
     * {@link FileAlreadyExistsException} if an entry for the file exists.
     */
    void put(CommitEntry entry, boolean overwrite) throws IOException {
        PutItemRequest.Builder request = PutItemRequest.builder().tableName(tableName).item(toItem(entry));
        if (!overwrite) {
            request.conditionExpression("attribute_not_exists(fileName)");
        }
        try {
            client.putItem(request.build());
        } catch (ConditionalCheckFailedException e) {
            throw new FileAlreadyExistsException(entry.absoluteFilePath().toString(), null,
                "DynamoDB entry exists in " + tableName);
        } catch (ResourceNotFoundException e) {
            throw missingTable(e);
        } catch (SdkException e) {
            throw new IOException("DynamoDB PutItem of " + entry.fileName() + " for "
                + entry.tablePath() + " in " + tableName + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * The commit point: creates {@code entry} only if no entry for its file exists, settling
     * every unknown outcome by reading the entry back (consistently) before anything else.
     *
     * <p>Returns normally iff the stored entry is this attempt's (same temp file): created now,
     * or by an earlier attempt whose response was lost (the SDK's retry, or ours, then fails the
     * condition against our own entry). Throws {@link FileAlreadyExistsException} iff another
     * writer's entry holds the file. A failed PutItem (5xx, throttling, no answer) is retried
     * with {@code backoff}, always conditionally, so no retry can replace another writer's entry;
     * after {@code maxAttempts} PutItems without a settled answer it throws
     * {@link CommitOutcomeUnknownException}: the entry may exist, or may still appear.
     */
    void claim(CommitEntry entry, int maxAttempts, Backoff backoff) throws IOException {
        claim(entry, maxAttempts, backoff, new CommitMetrics.Tally());
    }

    /** {@link #claim(CommitEntry, int, Backoff)} reporting each PutItem and each settle (a
     *  read-back finding our own entry) to {@code tally}. */
    void claim(CommitEntry entry, int maxAttempts, Backoff backoff, CommitMetrics.Tally tally)
            throws IOException {
        String location = entry.absoluteFilePath().toString();
        String lastError = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            if (attempt > 1) {
                backoff.sleepBefore(attempt - 1);
            }
            try {
                tally.attempt();
                put(entry, false);
                return;
            } catch (MissingTableException e) {
                throw e;
            } catch (IOException e) { // the condition failed, or no settled answer
                lastError = e.getMessage();
                if (e.getCause() instanceof SdkException && isRefusal((SdkException) e.getCause())) {
                    if (attempt == 1) {
                        throw e; // DynamoDB applied nothing, and nothing of ours is in flight
                    }
                    throw new CommitOutcomeUnknownException(location, "PutItem " + attempt + "/"
                        + maxAttempts + " in DynamoDB table " + tableName + " (temp file "
                        + entry.tempPath() + ") was refused after an earlier attempt whose "
                        + "outcome was not settled: " + lastError, e);
                }
            }
            Optional<CommitEntry> stored;
            try {
                stored = get(entry.tablePath(), entry.fileName());
            } catch (MissingTableException e) {
                throw e;
            } catch (IOException e) {
                lastError = lastError + "; read-back failed: " + e.getMessage();
                continue;
            }
            if (stored.isPresent()) {
                if (stored.get().sameAttempt(entry)) {
                    tally.settle();
                    return; // an earlier PutItem of ours landed; its response was lost
                }
                throw new FileAlreadyExistsException(entry.absoluteFilePath().toString(), null,
                    "another writer's DynamoDB entry holds it in " + tableName);
            }
        }
        throw new CommitOutcomeUnknownException(location, maxAttempts + " conditional PutItems "
            + "in DynamoDB table " + tableName + " (temp file " + entry.tempPath() + ") did not "
            + "settle; last error: " + lastError);
    }

    /**
     * An answer saying DynamoDB did not apply the request and no earlier attempt of it could
     * have been applied: a 4xx other than throttling (which the SDK retries, possibly after an
     * attempt that was applied) and other than the condition's failure.
     */
    static boolean isRefusal(SdkException e) {
        if (!(e instanceof SdkServiceException) || e instanceof ConditionalCheckFailedException) {
            return false;
        }
        SdkServiceException service = (SdkServiceException) e;
        return service.statusCode() >= 400 && service.statusCode() < 500
            && !service.isThrottlingException();
    }

    /** The entry for one commit file, read consistently. */
    Optional<CommitEntry> get(String tablePath, String fileName) throws IOException {
        Map<String, AttributeValue> key = new HashMap<>();
        key.put("tablePath", AttributeValue.fromS(tablePath));
        key.put("fileName", AttributeValue.fromS(fileName));
        try {
            Map<String, AttributeValue> item = client.getItem(GetItemRequest.builder()
                .tableName(tableName).key(key).consistentRead(true).build()).item();
            return item == null || item.isEmpty() ? Optional.empty() : Optional.of(fromItem(item));
        } catch (ResourceNotFoundException e) {
            throw missingTable(e);
        } catch (SdkException e) {
            throw new IOException("DynamoDB GetItem of " + fileName + " for " + tablePath + " in "
                + tableName + " failed: " + e.getMessage(), e);
        }
    }

    /** The newest entry of a table (highest fileName), read consistently. */
    Optional<CommitEntry> latest(String tablePath) throws IOException {
        try {
            List<Map<String, AttributeValue>> items = client.query(QueryRequest.builder()
                .tableName(tableName)
                .keyConditionExpression("tablePath = :tp")
                .expressionAttributeValues(Collections.singletonMap(":tp", AttributeValue.fromS(tablePath)))
                .scanIndexForward(false)
                .limit(1)
                .consistentRead(true)
                .build()).items();
            return items.isEmpty() ? Optional.empty() : Optional.of(fromItem(items.get(0)));
        } catch (ResourceNotFoundException e) {
            throw missingTable(e);
        } catch (SdkException e) {
            throw new IOException("DynamoDB Query of " + tablePath + " in " + tableName
                + " failed: " + e.getMessage(), e);
        }
    }

    private IOException missingTable(ResourceNotFoundException e) {
        return new MissingTableException("DynamoDB table " + tableName + " does not exist. Create it with "
            + "`deltaguard dynamodb create-table " + tableName + "` (deltaguard does not create it "
            + "implicitly: a mistyped name would silently split writers across two tables).", e);
    }

    static Map<String, AttributeValue> toItem(CommitEntry entry) {
        Map<String, AttributeValue> item = new HashMap<>();
        item.put("tablePath", AttributeValue.fromS(entry.tablePath()));
        item.put("fileName", AttributeValue.fromS(entry.fileName()));
        item.put("tempPath", AttributeValue.fromS(entry.tempPath()));
        item.put("complete", AttributeValue.fromS(entry.complete() ? "true" : "false"));
        if (entry.expireTime() != null) {
            item.put("expireTime", AttributeValue.fromN(entry.expireTime().toString()));
        }
        if (entry.marker() != null) {
            item.put(CommitEntry.MARKER_ATTRIBUTE, AttributeValue.fromS(entry.marker()));
        }
        return item;
    }

    static CommitEntry fromItem(Map<String, AttributeValue> item) {
        AttributeValue expire = item.get("expireTime");
        AttributeValue marker = item.get(CommitEntry.MARKER_ATTRIBUTE);
        return new CommitEntry(item.get("tablePath").s(), item.get("fileName").s(),
            item.get("tempPath").s(), "true".equals(item.get("complete").s()),
            expire == null ? null : Long.parseLong(expire.n()), marker == null ? null : marker.s());
    }
}
