package io.deltaguard.logstore;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Date;

import com.amazonaws.SdkClientException;
import com.amazonaws.services.s3.AbstractAmazonS3;
import com.amazonaws.services.s3.model.AmazonS3Exception;
import com.amazonaws.services.s3.model.ListObjectsV2Request;
import com.amazonaws.services.s3.model.ListObjectsV2Result;
import com.amazonaws.services.s3.model.PutObjectRequest;
import com.amazonaws.services.s3.model.PutObjectResult;
import com.amazonaws.services.s3.model.S3Object;
import com.amazonaws.services.s3.model.S3ObjectSummary;

/**
 * {@link FakeS3} behind the real SDK v1 {@code AmazonS3} interface. If-None-Match is read from
 * the request's custom headers, where {@link SdkS3Calls} puts it, so a request without the header
 * is an unconditional PUT here too.
 */
class ScriptedAmazonS3 extends AbstractAmazonS3 {
    private final FakeS3 store;

    ScriptedAmazonS3(FakeS3 store) {
        this.store = store;
    }

    static AmazonS3Exception error(int status, String code) {
        AmazonS3Exception e = new AmazonS3Exception(code);
        e.setStatusCode(status);
        e.setErrorCode(code);
        return e;
    }

    @Override
    public PutObjectResult putObject(PutObjectRequest request) {
        byte[] body;
        try {
            body = request.getInputStream().readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        boolean ifNoneMatch = "*".equals(request.getCustomRequestHeaders() == null ? null
            : request.getCustomRequestHeaders().get("If-None-Match"));
        try {
            store.put(request.getKey(), ifNoneMatch, body,
                request.getMetadata() == null ? java.util.Map.of()
                    : request.getMetadata().getUserMetadata());
        } catch (FakeS3.HttpError e) {
            throw error(e.status, e.code);
        } catch (FakeS3.NoAnswer e) {
            throw new SdkClientException("Unable to execute HTTP request: " + e.getMessage());
        }
        return new PutObjectResult();
    }

    @Override
    public S3Object getObject(String bucket, String key) {
        byte[] stored;
        try {
            stored = store.get(key);
        } catch (FakeS3.HttpError e) {
            throw error(e.status, e.code);
        } catch (FakeS3.NoAnswer e) {
            throw new SdkClientException("Unable to execute HTTP request: " + e.getMessage());
        }
        if (stored == null) {
            throw error(404, "NoSuchKey");
        }
        S3Object object = new S3Object();
        object.setBucketName(bucket);
        object.setKey(key);
        object.setObjectContent(new ByteArrayInputStream(stored));
        return object;
    }

    @Override
    public void deleteObject(String bucket, String key) {
        store.delete(key);
    }

    @Override
    public ListObjectsV2Result listObjectsV2(ListObjectsV2Request request) {
        FakeS3.Listing l = store.list(request.getPrefix(), request.getDelimiter(),
            request.getStartAfter(), request.getContinuationToken(), request.getMaxKeys());
        ListObjectsV2Result result = new ListObjectsV2Result();
        for (int i = 0; i < l.keys().size(); i++) {
            S3ObjectSummary o = new S3ObjectSummary();
            o.setKey(l.keys().get(i));
            o.setSize(l.sizes().get(i));
            o.setLastModified(new Date(1_000_000));
            result.getObjectSummaries().add(o);
        }
        result.setCommonPrefixes(l.prefixes());
        result.setKeyCount(l.keys().size() + l.prefixes().size());
        result.setTruncated(l.truncated());
        result.setNextContinuationToken(l.nextToken());
        return result;
    }
}
