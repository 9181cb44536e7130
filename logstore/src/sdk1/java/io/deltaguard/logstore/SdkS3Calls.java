package io.deltaguard.logstore;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.amazonaws.AmazonClientException;
import com.amazonaws.AmazonServiceException;
import com.amazonaws.services.s3.AmazonS3;
import com.amazonaws.services.s3.model.ListObjectsV2Request;
import com.amazonaws.services.s3.model.ListObjectsV2Result;
import com.amazonaws.services.s3.model.ObjectMetadata;
import com.amazonaws.services.s3.model.PutObjectRequest;
import com.amazonaws.services.s3.model.S3Object;
import com.amazonaws.services.s3.model.S3ObjectSummary;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * {@link S3Calls} on the AWS SDK v1 (hadoop-aws 3.3.x), through S3A's own client
 * ({@code getAmazonS3ClientForTesting}, public in 3.3.x; same endpoint, credentials, signer and
 * retry policy). SDK v1's {@code PutObjectRequest} has no If-None-Match setter (1.12.262), so
 * the header is sent with {@code putCustomRequestHeader}: the same request on the wire.
 */
final class SdkS3Calls implements S3Calls {
    private final AmazonS3 s3;

    SdkS3Calls(AmazonS3 s3) {
        this.s3 = s3;
    }

    /** The calls through {@code fs}'s own SDK v1 client; {@code purpose} is logged by S3A. */
    static S3Calls of(S3AFileSystem fs, String purpose) {
        return new SdkS3Calls(fs.getAmazonS3ClientForTesting(purpose));
    }

    @Override
    public void put(String bucket, String key, byte[] body, String contentType,
                     boolean ifNoneMatch, Map<String, String> userMetadata) throws S3Failure {
        ObjectMetadata metadata = new ObjectMetadata();
        metadata.setContentLength(body.length);
        metadata.setContentType(contentType);
        if (!userMetadata.isEmpty()) {
            metadata.setUserMetadata(userMetadata);
        }
        PutObjectRequest request =
            new PutObjectRequest(bucket, key, new ByteArrayInputStream(body), metadata);
        // The SDK re-reads the stream on its own retries; a byte array stream supports reset.
        request.getRequestClientOptions().setReadLimit(body.length + 1);
        if (ifNoneMatch) {
            request.putCustomRequestHeader("If-None-Match", "*");
        }
        try {
            s3.putObject(request);
        } catch (AmazonClientException e) {
            throw failure(e);
        }
    }

    @Override
    public Optional<byte[]> get(String bucket, String key) throws S3Failure {
        try (S3Object object = s3.getObject(bucket, key);
             InputStream in = object.getObjectContent()) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                out.write(buffer, 0, n);
            }
            return Optional.of(out.toByteArray());
        } catch (AmazonServiceException e) {
            if (e.getStatusCode() == 404 && "NoSuchKey".equals(e.getErrorCode())) {
                return Optional.empty();
            }
            throw failure(e);
        } catch (AmazonClientException e) {
            throw failure(e);
        } catch (IOException e) {
            throw S3Failure.noAnswer("reading the body of s3://" + bucket + "/" + key
                + " failed: " + e, e);
        }
    }

    @Override
    public void delete(String bucket, String key) throws S3Failure {
        try {
            s3.deleteObject(bucket, key);
        } catch (AmazonClientException e) {
            throw failure(e);
        }
    }

    @Override
    public S3ListPage list(String bucket, String prefix, String delimiter, String startAfter,
                           String continuationToken, int maxKeys) throws S3Failure {
        ListObjectsV2Request request = new ListObjectsV2Request().withBucketName(bucket)
            .withPrefix(prefix).withDelimiter(delimiter).withStartAfter(startAfter)
            .withContinuationToken(continuationToken);
        if (maxKeys > 0) {
            request.setMaxKeys(maxKeys);
        }
        ListObjectsV2Result result;
        try {
            result = s3.listObjectsV2(request);
        } catch (AmazonClientException e) {
            throw failure(e);
        }
        List<S3ListPage.Entry> files = new ArrayList<>();
        for (S3ObjectSummary o : result.getObjectSummaries()) {
            files.add(new S3ListPage.Entry(o.getKey(), o.getSize(),
                o.getLastModified() == null ? 0 : o.getLastModified().getTime()));
        }
        List<String> prefixes = new ArrayList<>(result.getCommonPrefixes());
        return new S3ListPage(files, prefixes,
            result.isTruncated() ? result.getNextContinuationToken() : null);
    }

    static S3Failure failure(AmazonClientException e) {
        if (e instanceof AmazonServiceException) {
            AmazonServiceException s = (AmazonServiceException) e;
            return S3Failure.of(s.getStatusCode(), s.getErrorCode(), s.getErrorMessage(), e);
        }
        return S3Failure.noAnswer(e.getClass().getSimpleName() + ": " + e.getMessage(), e);
    }
}
