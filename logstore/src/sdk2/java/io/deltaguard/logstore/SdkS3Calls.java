package io.deltaguard.logstore;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.hadoop.fs.s3a.S3AFileSystem;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@link S3Calls} on the AWS SDK v2 (hadoop-aws 3.4.0 and later), through S3A's own client
 * ({@code getS3AInternals().getAmazonS3Client}). {@code If-None-Match: *} is sent as a request
 * header through {@code overrideConfiguration}: SDK 2.24.6 (hadoop-aws 3.4.1) has no
 * {@code ifNoneMatch} builder method (2.27.9 added it), and the header is the same on the wire.
 */
final class SdkS3Calls implements S3Calls {
    private final S3Client s3;

    SdkS3Calls(S3Client s3) {
        this.s3 = s3;
    }

    /** The calls through {@code fs}'s own SDK v2 client; {@code purpose} is logged by S3A. */
    static S3Calls of(S3AFileSystem fs, String purpose) {
        return new SdkS3Calls(fs.getS3AInternals().getAmazonS3Client(purpose));
    }

    @Override
    public void put(String bucket, String key, byte[] body, String contentType,
                     boolean ifNoneMatch, Map<String, String> metadata) throws S3Failure {
        PutObjectRequest.Builder request = PutObjectRequest.builder()
            .bucket(bucket).key(key).contentType(contentType).contentLength((long) body.length);
        if (!metadata.isEmpty()) {
            request.metadata(metadata);
        }
        if (ifNoneMatch) {
            request.overrideConfiguration(o -> o.putHeader("If-None-Match", "*"));
        }
        try {
            s3.putObject(request.build(), RequestBody.fromBytes(body));
        } catch (SdkException e) {
            throw failure(e);
        }
    }

    @Override
    public Optional<byte[]> get(String bucket, String key) throws S3Failure {
        try {
            return Optional.of(s3.getObjectAsBytes(
                GetObjectRequest.builder().bucket(bucket).key(key).build()).asByteArray());
        } catch (NoSuchKeyException e) {
            return Optional.empty();
        } catch (SdkException e) {
            throw failure(e);
        }
    }

    @Override
    public void delete(String bucket, String key) throws S3Failure {
        try {
            s3.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(key).build());
        } catch (SdkException e) {
            throw failure(e);
        }
    }

    @Override
    public S3ListPage list(String bucket, String prefix, String delimiter, String startAfter,
                           String continuationToken, int maxKeys) throws S3Failure {
        ListObjectsV2Request.Builder request = ListObjectsV2Request.builder()
            .bucket(bucket).prefix(prefix).delimiter(delimiter).startAfter(startAfter)
            .continuationToken(continuationToken);
        if (maxKeys > 0) {
            request.maxKeys(maxKeys);
        }
        ListObjectsV2Response response;
        try {
            response = s3.listObjectsV2(request.build());
        } catch (SdkException e) {
            throw failure(e);
        }
        List<S3ListPage.Entry> files = new ArrayList<>();
        for (S3Object o : response.contents()) {
            files.add(new S3ListPage.Entry(o.key(), o.size(), o.lastModified().toEpochMilli()));
        }
        List<String> prefixes = new ArrayList<>();
        for (CommonPrefix p : response.commonPrefixes()) {
            prefixes.add(p.prefix());
        }
        return new S3ListPage(files, prefixes, Boolean.TRUE.equals(response.isTruncated())
            ? response.nextContinuationToken() : null);
    }

    static S3Failure failure(SdkException e) {
        if (e instanceof S3Exception) {
            S3Exception s3e = (S3Exception) e;
            String code = s3e.awsErrorDetails() == null ? null : s3e.awsErrorDetails().errorCode();
            return S3Failure.of(s3e.statusCode(), code, s3e.getMessage(), e);
        }
        if (e instanceof SdkClientException) {
            return S3Failure.noAnswer(e.getClass().getSimpleName() + ": " + e.getMessage(), e);
        }
        return S3Failure.of(0, null, e.getClass().getSimpleName() + ": " + e.getMessage(), e);
    }
}
