package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import software.amazon.awssdk.core.exception.SdkException;
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
 * creates the entry for (tablePath, N.json). That PutItem is the commit point.
 */
final class DynamoDBCommitTable {
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
