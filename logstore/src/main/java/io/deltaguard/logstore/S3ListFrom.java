package io.deltaguard.logstore;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * {@code LogStore.listFrom} on S3 with ListObjectsV2 {@code start-after}: lists only the names
 * that sort at or after the given one, in the same directory, in S3's (UTF-8 binary) order,
 * which is the order Delta expects. A long log therefore costs one page per 1,000 new entries,
 * not a listing of the whole {@code _delta_log}. Pages are fetched lazily.
 *
 * <p>Like Hadoop's {@code listStatus}, which Delta's own S3 stores use, the result includes the
 * subdirectories (S3 common prefixes, as directory statuses with length and modification time
 * 0), merged into key order. Delta lists data directories through the LogStore too:
 * {@code VACUUM}'s recursive listing ({@code DeltaFileOperations.recursiveListDirs}) descends
 * only into the directories {@code listFrom} returns, so omitting them would hide every file in
 * a partition directory from VACUUM. A directory sorts by its key with the trailing slash, as
 * S3 returns it.
 *
 * <p>Throws {@link FileNotFoundException} when the directory holds no object at all, as Delta's
 * snapshot management expects for a table that does not exist.
 */
final class S3ListFrom extends S3PagedListing {
    private final S3Calls client;
    private final String bucket;
    private final String key;
    private final long blockSize;
    private final String prefix;
    private final Path parent;

    private S3ListFrom(S3Calls client, String bucket, String key, Path qualified,
                       long blockSize) {
        this.client = client;
        this.bucket = bucket;
        this.key = key;
        this.blockSize = blockSize;
        int slash = key.lastIndexOf('/');
        this.prefix = slash < 0 ? "" : key.substring(0, slash + 1);
        this.parent = qualified.getParent();
    }

    static Iterator<FileStatus> listFrom(S3Target target) throws IOException {
        Path parent = target.qualified().getParent();
        return listFrom(target.calls(), target.bucket(), target.key(), target.qualified(),
            target.fs().getDefaultBlockSize(parent));
    }

    /**
     * The entries of {@code qualified}'s directory whose keys sort at or after {@code key}
     * ({@code qualified}'s object key in {@code bucket}); files get {@code blockSize}.
     */
    static Iterator<FileStatus> listFrom(S3Calls client, String bucket, String key,
                                         Path qualified, long blockSize) throws IOException {
        S3ListFrom it = new S3ListFrom(client, bucket, key, qualified, blockSize);
        try {
            it.fetchPage();
            if (it.page.isEmpty() && it.exhausted() && !it.directoryExists()) {
                throw new FileNotFoundException("No such file or directory: " + it.parent);
            }
        } catch (S3Failure e) {
            throw new IOException("Listing " + it.parent + " failed: " + e.describe(), e);
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

    private boolean directoryExists() throws S3Failure {
        return !client.list(bucket, prefix, null, null, null, 1).isEmpty();
    }

    @Override
    protected S3ListPage request(String continuationToken) throws S3Failure {
        return continuationToken == null
            ? client.list(bucket, prefix, "/", keyBefore(key), null, 0)
            : client.list(bucket, prefix, "/", null, continuationToken, 0);
    }

    @Override
    protected boolean accept(S3ListPage response) {
        for (S3ListPage.Entry o : response.inKeyOrder()) {
            if (!o.isDirectory) {
                if (o.key.equals(prefix) || o.key.compareTo(key) < 0) {
                    continue; // directory marker, or keyBefore's byte trick let a smaller key in
                }
                page.add(new FileStatus(o.size, false, 1, blockSize, o.lastModifiedMs,
                    new Path(parent, o.key.substring(prefix.length()))));
            } else {
                String name = o.key.substring(prefix.length(), o.key.length() - 1);
                if (name.isEmpty() || o.key.substring(0, o.key.length() - 1).compareTo(key) < 0) {
                    continue; // "dir//" keys, or a directory named before the start
                }
                page.add(new FileStatus(0, true, 1, 0, 0, new Path(parent, name)));
            }
        }
        return true;
    }

    @Override
    protected String describe() {
        return parent.toString();
    }
}
