package io.deltaguard.logstore;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;

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

/**
 * An in-memory DynamoDB table behind the real SDK v2 {@link DynamoDbClient} interface, with a
 * script of faults for the next PutItems and GetItems. It evaluates
 * {@code attribute_not_exists(fileName)} atomically, as DynamoDB does.
 */
class ScriptedDynamoDb implements DynamoDbClient {
    /** What to do with one request. */
    enum Fault {
        NONE,
        /** HTTP 500 InternalServerError, nothing applied. */
        ERROR_500,
        /** HTTP 400 AccessDeniedException, nothing applied. */
        ERROR_403,
        /** Applied, then the answer was lost. */
        DROP_RESPONSE,
        /** No answer, nothing applied. */
        RESET_BEFORE
    }

    final Map<String, Map<String, AttributeValue>> items = new HashMap<>();
    final Deque<Fault> putScript = new ArrayDeque<>();
    final Deque<Fault> getScript = new ArrayDeque<>();
    int puts;
    int gets;

    private static String key(Map<String, AttributeValue> item) {
        return item.get("tablePath").s() + "|" + item.get("fileName").s();
    }

    private static DynamoDbException error(int status, String code) {
        return (DynamoDbException) DynamoDbException.builder().statusCode(status).message(code)
            .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).build()).build();
    }

    private static void before(Fault fault) {
        switch (fault) {
            case ERROR_500: throw error(500, "InternalServerError");
            case ERROR_403: throw error(400, "AccessDeniedException");
            case RESET_BEFORE: throw SdkClientException.create("Connection reset");
            default: break;
        }
    }

    @Override
    public synchronized PutItemResponse putItem(PutItemRequest request) {
        puts++;
        Fault fault = putScript.isEmpty() ? Fault.NONE : putScript.poll();
        before(fault);
        String k = key(request.item());
        if (request.conditionExpression() != null && items.containsKey(k)) {
            throw ConditionalCheckFailedException.builder().statusCode(400)
                .message("The conditional request failed").build();
        }
        items.put(k, new HashMap<>(request.item()));
        if (fault == Fault.DROP_RESPONSE) {
            throw SdkClientException.create("Unexpected end of stream (response lost)");
        }
        return PutItemResponse.builder().build();
    }

    @Override
    public synchronized GetItemResponse getItem(GetItemRequest request) {
        gets++;
        Fault fault = getScript.isEmpty() ? Fault.NONE : getScript.poll();
        before(fault);
        Map<String, AttributeValue> item = items.get(key(request.key()));
        if (fault == Fault.DROP_RESPONSE) {
            throw SdkClientException.create("Unexpected end of stream (response lost)");
        }
        return GetItemResponse.builder().item(item).build();
    }

    @Override
    public String serviceName() {
        return "dynamodb";
    }

    @Override
    public void close() {}
}
