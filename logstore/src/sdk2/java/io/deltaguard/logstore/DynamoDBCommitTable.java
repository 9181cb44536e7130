package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
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
 * <p>{@link #commit} is a PutItem conditioned on {@code attribute_not_exists(fileName)}:
 * DynamoDB evaluates it atomically, so exactly one writer creates the entry for
 * (tablePath, N.json). That PutItem is the commit point.
 */
final class DynamoDBCommitTable {
    private static final Logger LOG = LoggerFactory.getLogger(DynamoDBCommitTable.class);

    private final DynamoDbClient client;
    private final String tableName;

    DynamoDBCommitTable(DynamoDbClient client, String tableName) {
        this.client = client;
        this.tableName = tableName;
    }

    String tableName() {
        return tableName;
    }

    /** Writes the entry unconditionally (marking it complete; a repair). */
    void put(CommitEntry entry) throws IOException {
        try {
            client.putItem(PutItemRequest.builder().tableName(tableName).item(toItem(entry)).build());
        } catch (ResourceNotFoundException e) {
            throw missingTable(e);
        } catch (SdkException e) {
            throw new IOException("DynamoDB PutItem of " + entry.fileName() + " for "
                + entry.tablePath() + " in " + tableName + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * The commit point: creates the entry with {@code attribute_not_exists(fileName)}. When the
     * PutItem fails in a way that may have written it (its condition failed, which an SDK retry
     * of our own landed PutItem also gets; a 5xx, a throttle after such a retry, no answer), the
     * entry is read back consistently: our temp path there means the commit is ours, and
     * returns normally (Delta's store would report a conflict here and commit the same actions
     * again at N+1).
     *
     * @throws FileAlreadyExistsException if another writer's entry is there
     * @throws CommitOutcomeUnknownException if no entry is there yet after a failure that may
     *     still write ours, or the read-back fails
     * @throws IOException if DynamoDB refused the PutItem (missing table, access denied, a
     *     malformed item): nothing was written
     */
    void commit(CommitEntry entry) throws IOException {
        String location = entry.absoluteFilePath().toString();
        String failure;
        try {
            client.putItem(PutItemRequest.builder().tableName(tableName).item(toItem(entry))
                .conditionExpression("attribute_not_exists(fileName)").build());
            return;
        } catch (ConditionalCheckFailedException e) {
            failure = "its condition failed";
        } catch (ResourceNotFoundException e) {
            throw missingTable(e);
        } catch (SdkException e) {
            if (isRefusal(e)) {
                throw new IOException("DynamoDB PutItem of " + entry.fileName() + " for "
                    + entry.tablePath() + " in " + tableName + " failed: " + e.getMessage(), e);
            }
            failure = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        String what = "the DynamoDB PutItem of its entry in " + tableName + " failed (" + failure
            + ")";
        Optional<CommitEntry> stored;
        try {
            stored = get(entry.tablePath(), entry.fileName());
        } catch (IOException e) {
            throw new CommitOutcomeUnknownException(location, what + " and reading the entry back "
                + "failed: " + e.getMessage(), e);
        }
        if (!stored.isPresent()) {
            throw new CommitOutcomeUnknownException(location, what + " and there is no entry yet; "
                + "an entry that lands later names our temp file " + entry.tempPath() + ", which "
                + "the next writer or reader of the table copies to " + entry.fileName());
        }
        if (!stored.get().tempPath().equals(entry.tempPath())) {
            throw new FileAlreadyExistsException(location, null,
                "DynamoDB entry exists in " + tableName);
        }
        LOG.info("DynamoDB entry for {} is ours: an earlier PutItem landed, its response was lost",
            location);
    }

    /**
     * An answer saying DynamoDB did not apply the request and no earlier attempt of it could
     * have been applied: a 4xx other than throttling (which the SDK retries, possibly after an
     * attempt that was applied).
     */
    static boolean isRefusal(SdkException e) {
        if (!(e instanceof SdkServiceException)) {
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
        return new IOException("DynamoDB table " + tableName + " does not exist. Create it with "
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
        return item;
    }

    static CommitEntry fromItem(Map<String, AttributeValue> item) {
        AttributeValue expire = item.get("expireTime");
        return new CommitEntry(item.get("tablePath").s(), item.get("fileName").s(),
            item.get("tempPath").s(), "true".equals(item.get("complete").s()),
            expire == null ? null : Long.parseLong(expire.n()));
    }
}
