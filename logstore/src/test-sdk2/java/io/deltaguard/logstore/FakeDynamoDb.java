package io.deltaguard.logstore;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.PutItemResponse;
import software.amazon.awssdk.services.dynamodb.model.QueryRequest;
import software.amazon.awssdk.services.dynamodb.model.QueryResponse;

/**
 * An in-memory DynamoDB commit table behind the real SDK v2 {@link DynamoDbClient} interface,
 * with a script of faults for the next PutItems: the condition
 * {@code attribute_not_exists(fileName)} is evaluated atomically, as DynamoDB does. Only the
 * three calls the stores make are implemented (the SDK's defaults throw for the rest).
 */
class FakeDynamoDb implements DynamoDbClient {
    /** What to do with one PutItem: fail before storing, store then lose the answer, or pass. */
    enum Fault { NONE, ERROR_500, THROTTLED, DROP_RESPONSE }

    /** (tablePath, fileName) -> item. */
    final Map<String, TreeMap<String, Map<String, AttributeValue>>> items = new HashMap<>();
    final Deque<Fault> script = new ArrayDeque<>();
    /** Every request in arrival order: "PUT fileName [conditional]", "GET fileName", "QUERY". */
    final List<String> requests = new ArrayList<>();
    /** Runs before each PutItem is applied (e.g. a concurrent writer). */
    Runnable beforePut = () -> { };

    private static DynamoDbException error(int status, String code) {
        return (DynamoDbException) DynamoDbException.builder().statusCode(status).message(code)
            .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).build()).build();
    }

    synchronized Map<String, AttributeValue> item(String tablePath, String fileName) {
        TreeMap<String, Map<String, AttributeValue>> table = items.get(tablePath);
        return table == null ? null : table.get(fileName);
    }

    synchronized void store(Map<String, AttributeValue> item) {
        items.computeIfAbsent(item.get("tablePath").s(), k -> new TreeMap<>())
            .put(item.get("fileName").s(), new HashMap<>(item));
    }

    @Override
    public synchronized PutItemResponse putItem(PutItemRequest request) {
        beforePut.run();
        String fileName = request.item().get("fileName").s();
        boolean conditional = request.conditionExpression() != null;
        requests.add("PUT " + fileName + (conditional ? " conditional" : ""));
        Fault fault = script.isEmpty() ? Fault.NONE : script.poll();
        switch (fault) {
            case ERROR_500: throw error(500, "InternalServerError");
            case THROTTLED: throw error(400, "ProvisionedThroughputExceededException");
            default: break;
        }
        if (conditional) {
            if (!"attribute_not_exists(fileName)".equals(request.conditionExpression())) {
                throw new IllegalArgumentException(request.conditionExpression());
            }
            if (item(request.item().get("tablePath").s(), fileName) != null) {
                throw ConditionalCheckFailedException.builder().statusCode(400)
                    .message("The conditional request failed").build();
            }
        }
        store(request.item());
        if (fault == Fault.DROP_RESPONSE) {
            throw SdkClientException.create("Unable to execute HTTP request: response lost");
        }
        return PutItemResponse.builder().build();
    }

    @Override
    public synchronized GetItemResponse getItem(GetItemRequest request) {
        requests.add("GET " + request.key().get("fileName").s());
        Map<String, AttributeValue> item = item(request.key().get("tablePath").s(),
            request.key().get("fileName").s());
        return GetItemResponse.builder().item(item).build();
    }

    @Override
    public synchronized QueryResponse query(QueryRequest request) {
        requests.add("QUERY");
        TreeMap<String, Map<String, AttributeValue>> table =
            items.get(request.expressionAttributeValues().get(":tp").s());
        List<Map<String, AttributeValue>> out = new ArrayList<>();
        if (table != null) {
            for (Map<String, AttributeValue> item : Boolean.FALSE.equals(request.scanIndexForward())
                    ? table.descendingMap().values() : table.values()) {
                if (request.limit() != null && out.size() == request.limit()) {
                    break;
                }
                out.add(item);
            }
        }
        return QueryResponse.builder().items(out).count(out.size()).build();
    }

    @Override
    public String serviceName() {
        return "dynamodb";
    }

    @Override
    public void close() {}
}
