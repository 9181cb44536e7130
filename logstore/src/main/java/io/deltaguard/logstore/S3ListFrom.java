package io.deltaguard.logstore;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@code LogStore.listFrom} on S3 with ListObjectsV2 {@code start-after}: lists only the names
 * that sort at or after the given one, in the same directory, in S3's (UTF-8 binary) order,
 * which is the order Delta expects. A long log therefore costs one page per 1,000 new entries,
 * not a listing of the whole {@code _delta_log}. Pages are fetched lazily.
 *
 * <p>Throws {@link FileNotFoundException} when the directory holds no object at all, as Delta's
 * snapshot management expects for a table that does not exist.
 */
final class S3ListFrom implements Iterator<FileStatus> {
    private final S3Target target;
    private final String prefix;
    private final Path parent;
    private final Deque<FileStatus> page = new ArrayDeque<>();
    private String continuationToken;
    private boolean exhausted;

    private S3ListFrom(S3Target target) {
        this.target = target;
        String parentKey = target.parentKey();
        this.prefix = parentKey.isEmpty() ? "" : parentKey + "/";
        this.parent = target.qualified().getParent();
    }

    static Iterator<FileStatus> listFrom(S3Target target) throws IOException {
        S3ListFrom it = new S3ListFrom(target);
        try {
            it.fetchPage();
            if (it.page.isEmpty() && it.exhausted && !it.directoryExists()) {
                throw new FileNotFoundException("No such file or directory: " + it.parent);
            }
        } catch (SdkException e) {
            throw new IOException("Listing " + it.parent + " failed: " + S3Failure.describe(e), e);
        }
        return it;
    }

    /** The key just before {@code key} in byte order, so start-after includes {@code key}. */
    static String keyBefore(String key) {
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        if (bytes.length == 0) {
            return null;
        }
        if (bytes[bytes.length - 1] > 0) {
            bytes[bytes.length - 1] -= 1;
            return new String(bytes, StandardCharsets.UTF_8);
        }
        return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
    }

    private boolean directoryExists() {
        ListObjectsV2Response r = target.client().listObjectsV2(ListObjectsV2Request.builder()
            .bucket(target.bucket()).prefix(prefix).maxKeys(1).build());
        return r.keyCount() != null && r.keyCount() > 0;
    }

    private void fetchPage() {
        ListObjectsV2Request.Builder request = ListObjectsV2Request.builder()
            .bucket(target.bucket())
            .prefix(prefix)
            .delimiter("/");
        if (continuationToken == null) {
            request.startAfter(keyBefore(target.key()));
        } else {
            request.continuationToken(continuationToken);
        }
        ListObjectsV2Response response = target.client().listObjectsV2(request.build());
        for (S3Object o : response.contents()) {
            if (o.key().equals(prefix) || o.key().compareTo(target.key()) < 0) {
                continue; // directory marker, or keyBefore's byte trick let a smaller key in
            }
            String name = o.key().substring(prefix.length());
            page.add(new FileStatus(o.size(), false, 1, target.fs().getDefaultBlockSize(parent),
                o.lastModified().toEpochMilli(), new Path(parent, name)));
        }
        if (Boolean.TRUE.equals(response.isTruncated())) {
            continuationToken = response.nextContinuationToken();
        } else {
            exhausted = true;
        }
    }

    @Override
    public boolean hasNext() {
        while (page.isEmpty() && !exhausted) {
            try {
                fetchPage();
            } catch (SdkException e) {
                throw new UncheckedIOException(new IOException(
                    "Listing " + parent + " failed: " + S3Failure.describe(e), e));
            }
        }
        return !page.isEmpty();
    }

    @Override
    public FileStatus next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return page.poll();
    }
}
