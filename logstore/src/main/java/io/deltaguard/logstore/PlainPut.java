package io.deltaguard.logstore;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * One unconditional PutObject of a path's key through the same S3A client the LogStore uses:
 * the baseline a commit's latency is compared with ({@code tools.CommitLatency}). Never used
 * for commits.
 */
public final class PlainPut {
    private PlainPut() {}

    /** PUTs {@code body} to {@code path}'s key; last writer wins. */
    public static void put(Path path, byte[] body, Configuration hadoopConf) throws IOException {
        S3Target target = S3Target.resolve(path, hadoopConf);
        try {
            target.calls().put(target.bucket(), target.key(), body, "application/json", false);
        } catch (S3Failure e) {
            throw new IOException("PUT of " + target.qualified() + " failed: " + e.describe(), e);
        }
    }
}
