package io.deltaguard.logstore;

import java.io.IOException;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * {@code CheckpointFileManager.exists} of deltaguard's checkpoint file managers on an S3A path:
 * one ListObjectsV2 request in the common cases, where S3A's {@code exists} sends a HEAD of the
 * key and, when that finds nothing, a LIST of the key as a directory.
 *
 * <p><b>Contract.</b> The same answer as S3A's {@code exists}: true if an object has the path's
 * key (a file) or any object's key starts with the key and a {@code /} (a directory, a marker
 * {@code key/} included); false otherwise. Structured Streaming asks it before every entry of
 * its offset, commit and source logs ({@code HDFSMetadataLog.addNewBatchByStream}: the entry is
 * written only if absent), where the answer is almost always "absent": that costs one request
 * here, two through S3A.
 *
 * <p><b>Why one LIST is exact.</b> It asks for the keys that start with {@code key}, rolled up
 * at {@code /}, at most one entry, in S3's key order (UTF-8 bytes). {@code key} itself is the
 * smallest key with that prefix, so if the file exists it is that entry. Otherwise the entry is
 * the smallest of the directory {@code key/} (a common prefix) and the other keys that start
 * with {@code key}: if it is {@code key/}, the directory exists; if it sorts after {@code key/},
 * no key starts with {@code key/}; if the listing is empty, nothing starts with {@code key}.
 * Only an entry between {@code key} and {@code key/} (a key continuing with a byte below
 * {@code /}, such as {@code key-1} or {@code key.tmp}) leaves the directory open: then a second
 * LIST of {@code key/} answers, as S3A's second probe would. A failed request is an
 * {@code IOException} naming the path (S3A's client has retried it), as S3A's own would be.
 */
final class CheckpointExists {
    private CheckpointExists() {}

    /**
     * Whether {@code path} exists (class contract), or null when S3A does not serve it, it is a
     * bucket's root, or {@link LogStoreSettings#CHECKPOINT_LIST_EXISTS} is false: the caller
     * then asks Spark's own manager.
     */
    static Boolean exists(Path path, Configuration conf) throws IOException {
        if (!S3Target.servedByS3A(path, conf)
                || !LogStoreSettings.from(conf).checkpointListExists()) {
            return null;
        }
        S3Target target = S3Target.resolve(path, conf);
        if (target.key().isEmpty()) {
            return null;
        }
        try {
            return exists(target.calls(), target.bucket(), target.key());
        } catch (S3Failure e) {
            throw new IOException("Checking whether " + target.qualified() + " exists failed: "
                + e.describe(), e);
        }
    }

    /** Whether {@code key} is an object or a directory in {@code bucket} (class contract). */
    static boolean exists(S3Calls s3, String bucket, String key) throws S3Failure {
        String directory = key + "/";
        List<S3ListPage.Entry> first = s3.list(bucket, key, "/", null, null, 1).inKeyOrder();
        if (first.isEmpty()) {
            return false;
        }
        S3ListPage.Entry entry = first.get(0);
        if (entry.key.equals(key) || entry.key.equals(directory)) {
            return true;
        }
        if (S3ListPage.compareKeys(entry.key, directory) > 0) {
            return false;
        }
        return !s3.list(bucket, directory, "/", null, null, 1).isEmpty();
    }
}
