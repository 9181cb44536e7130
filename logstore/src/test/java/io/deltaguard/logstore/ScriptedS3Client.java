package io.deltaguard.logstore;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectResponse;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * An in-memory object store behind the real SDK v2 {@link S3Client} interface, with a script of
 * faults for the next PUTs. It implements If-None-Match the way S3 does (atomically, 412), or
 * ignores it when {@code honourIfNoneMatch} is false. Used to pin down the protocol's decisions;
 * the same scenarios run end to end against LocalStack through the fault proxy in tests/.
 */
class ScriptedS3Client implements S3Client {
    /** What to do with one PUT: throw before storing, store then throw (lost response), or pass. */
    enum Fault { NONE, ERROR_409, ERROR_503, ERROR_403, RESET_BEFORE, DROP_RESPONSE }

    final Map<String, byte[]> objects = new ConcurrentHashMap<>();
    final Deque<Fault> script = new ArrayDeque<>();
    final boolean honourIfNoneMatch;
    int puts;
    int gets;
    int pageSize = 1000;

    ScriptedS3Client(boolean honourIfNoneMatch) {
        this.honourIfNoneMatch = honourIfNoneMatch;
    }

    static S3Exception error(int status, String code) {
        return (S3Exception) S3Exception.builder().statusCode(status).message(code)
            .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).build()).build();
    }

    @Override
    public synchronized PutObjectResponse putObject(PutObjectRequest request, RequestBody body) {
        puts++;
        Fault fault = script.isEmpty() ? Fault.NONE : script.poll();
        switch (fault) {
            case ERROR_409: throw error(409, "ConditionalRequestConflict");
            case ERROR_503: throw error(503, "SlowDown");
            case ERROR_403: throw error(403, "AccessDenied");
            case RESET_BEFORE: throw SdkClientException.create("Connection reset");
            default: break;
        }
        if ("*".equals(request.ifNoneMatch()) && honourIfNoneMatch
                && objects.containsKey(request.key())) {
            throw error(412, "PreconditionFailed");
        }
        objects.put(request.key(), read(body));
        if (fault == Fault.DROP_RESPONSE) {
            throw SdkClientException.create("Unexpected end of stream (response lost)");
        }
        return PutObjectResponse.builder().build();
    }

    @Override
    public synchronized ResponseBytes<GetObjectResponse> getObjectAsBytes(GetObjectRequest request) {
        gets++;
        byte[] stored = objects.get(request.key());
        if (stored == null) {
            throw NoSuchKeyException.builder().statusCode(404).message("NoSuchKey").build();
        }
        return ResponseBytes.fromByteArray(GetObjectResponse.builder().build(), stored);
    }

    /**
     * ListObjectsV2 as S3 answers it: keys in byte order after {@code start-after}, rolled up
     * into common prefixes at the delimiter, at most {@link #pageSize} entries a page (contents
     * and prefixes together), continued by a token.
     */
    @Override
    public synchronized ListObjectsV2Response listObjectsV2(ListObjectsV2Request request) {
        String prefix = request.prefix() == null ? "" : request.prefix();
        String after = request.continuationToken() != null ? request.continuationToken()
            : request.startAfter() == null ? "" : request.startAfter();
        int limit = request.maxKeys() == null ? pageSize : Math.min(pageSize, request.maxKeys());
        List<S3Object> contents = new ArrayList<>();
        List<CommonPrefix> prefixes = new ArrayList<>();
        String last = null;
        boolean truncated = false;
        for (String key : new TreeMap<>(objects).tailMap(after, false).keySet()) {
            if (!key.startsWith(prefix)) {
                continue;
            }
            int cut = request.delimiter() == null ? -1
                : key.indexOf(request.delimiter(), prefix.length());
            String entry = cut < 0 ? key : key.substring(0, cut + 1);
            if (last != null && last.endsWith("/") && key.startsWith(last)) {
                continue;
            }
            if (contents.size() + prefixes.size() == limit) {
                truncated = true;
                break;
            }
            if (cut < 0) {
                contents.add(S3Object.builder().key(key).size((long) objects.get(key).length)
                    .lastModified(Instant.ofEpochMilli(1_000_000)).build());
            } else {
                prefixes.add(CommonPrefix.builder().prefix(entry).build());
            }
            last = entry;
        }
        // A token resumes after the last entry, past a prefix's whole subtree.
        String token = last != null && last.endsWith("/") ? last + "\uffff" : last;
        return ListObjectsV2Response.builder().contents(contents).commonPrefixes(prefixes)
            .keyCount(contents.size() + prefixes.size()).isTruncated(truncated)
            .nextContinuationToken(truncated ? token : null).build();
    }

    @Override
    public synchronized DeleteObjectResponse deleteObject(DeleteObjectRequest request) {
        objects.remove(request.key());
        return DeleteObjectResponse.builder().build();
    }

    private static byte[] read(RequestBody body) {
        try (var in = body.contentStreamProvider().newStream()) {
            return in.readAllBytes();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String serviceName() {
        return "s3";
    }

    @Override
    public void close() {}

}
