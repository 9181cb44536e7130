package io.deltaguard.logstore;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

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
 * {@link FakeS3} behind the real SDK v2 {@link S3Client} interface. If-None-Match is read from
 * the request's override headers, where {@link SdkS3Calls} puts it (SDK 2.24.6 has no builder
 * method for it), so a request without the header is an unconditional PUT here too.
 */
class ScriptedS3Client implements S3Client {
    private final FakeS3 store;

    ScriptedS3Client(FakeS3 store) {
        this.store = store;
    }

    static S3Exception error(int status, String code) {
        return (S3Exception) S3Exception.builder().statusCode(status).message(code)
            .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).build()).build();
    }

    static boolean ifNoneMatchStar(PutObjectRequest request) {
        return request.overrideConfiguration()
            .map(o -> o.headers().getOrDefault("If-None-Match", List.of()).contains("*"))
            .orElse(false);
    }

    @Override
    public PutObjectResponse putObject(PutObjectRequest request, RequestBody body) {
        try (var in = body.contentStreamProvider().newStream()) {
            store.put(request.key(), ifNoneMatchStar(request), in.readAllBytes(),
                request.metadata());
        } catch (FakeS3.HttpError e) {
            throw error(e.status, e.code);
        } catch (FakeS3.NoAnswer e) {
            throw SdkClientException.create(e.getMessage());
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
        return PutObjectResponse.builder().build();
    }

    @Override
    public ResponseBytes<GetObjectResponse> getObjectAsBytes(GetObjectRequest request) {
        byte[] stored;
        try {
            stored = store.get(request.key());
        } catch (FakeS3.HttpError e) {
            throw error(e.status, e.code);
        } catch (FakeS3.NoAnswer e) {
            throw SdkClientException.create(e.getMessage());
        }
        if (stored == null) {
            throw NoSuchKeyException.builder().statusCode(404).message("NoSuchKey").build();
        }
        return ResponseBytes.fromByteArray(GetObjectResponse.builder().build(), stored);
    }

    @Override
    public ListObjectsV2Response listObjectsV2(ListObjectsV2Request request) {
        FakeS3.Listing l = store.list(request.prefix(), request.delimiter(), request.startAfter(),
            request.continuationToken(), request.maxKeys());
        List<S3Object> contents = new ArrayList<>();
        for (int i = 0; i < l.keys().size(); i++) {
            contents.add(S3Object.builder().key(l.keys().get(i)).size(l.sizes().get(i))
                .lastModified(Instant.ofEpochMilli(1_000_000)).build());
        }
        List<CommonPrefix> prefixes = new ArrayList<>();
        for (String p : l.prefixes()) {
            prefixes.add(CommonPrefix.builder().prefix(p).build());
        }
        return ListObjectsV2Response.builder().contents(contents).commonPrefixes(prefixes)
            .keyCount(contents.size() + prefixes.size()).isTruncated(l.truncated())
            .nextContinuationToken(l.nextToken()).build();
    }

    @Override
    public DeleteObjectResponse deleteObject(DeleteObjectRequest request) {
        store.delete(request.key());
        return DeleteObjectResponse.builder().build();
    }

    @Override
    public String serviceName() {
        return "s3";
    }

    @Override
    public void close() {}
}
