package io.deltaguard.logstore;

import java.io.IOException;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * Where a Delta log path lives in S3, resolved through the S3A filesystem that serves the path,
 * so the LogStore uses exactly S3A's endpoint, credentials, region and path-style settings
 * (including per-bucket {@code fs.s3a.bucket.<name>.*} overrides). Works for s3:// as well as
 * s3a:// paths, as long as the scheme is served by S3AFileSystem ({@code fs.s3.impl}).
 * {@link #calls} sends requests through S3A's own SDK client (same connection pool and retry
 * policy), whichever SDK generation this jar was built for.
 */
final class S3Target {
    /**
     * One adapter per live S3A filesystem: S3A's client does not change during the
     * filesystem's life, and asking for it logs a warning each time on Hadoop 3.3.
     */
    private static final Map<S3AFileSystem, S3Calls> CALLS =
        Collections.synchronizedMap(new WeakHashMap<S3AFileSystem, S3Calls>());

    private final S3AFileSystem fs;
    private final S3Calls calls;
    private final String bucket;
    private final String key;
    private final Path qualified;
    private final String endpoint;

    private S3Target(S3AFileSystem fs, S3Calls calls, String bucket, String key, Path qualified,
                     String endpoint) {
        this.fs = fs;
        this.calls = calls;
        this.bucket = bucket;
        this.key = key;
        this.qualified = qualified;
        this.endpoint = endpoint;
    }

    /** Whether S3A serves {@code path} (directly or under a filter filesystem). */
    static boolean servedByS3A(Path path, Configuration hadoopConf) throws IOException {
        return s3a(path.getFileSystem(hadoopConf)) instanceof S3AFileSystem;
    }

    private static FileSystem s3a(FileSystem fs) {
        while (!(fs instanceof S3AFileSystem) && fs instanceof FilterFileSystem) {
            fs = ((FilterFileSystem) fs).getRawFileSystem();
        }
        return fs;
    }

    static S3Target resolve(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = s3a(path.getFileSystem(hadoopConf));
        if (!(fs instanceof S3AFileSystem)) {
            throw new IOException("deltaguard's S3 LogStore needs the path " + path + " to be "
                + "served by org.apache.hadoop.fs.s3a.S3AFileSystem, but its scheme is served by "
                + fs.getClass().getName() + ". Set fs." + path.toUri().getScheme()
                + ".impl=org.apache.hadoop.fs.s3a.S3AFileSystem.");
        }
        S3AFileSystem s3a = (S3AFileSystem) fs;
        Path qualified = s3a.makeQualified(path);
        String endpoint = s3a.getConf().getTrimmed("fs.s3a.endpoint", "");
        if (endpoint.isEmpty()) {
            endpoint = "AWS S3 (region " + s3a.getConf().getTrimmed("fs.s3a.endpoint.region", "default")
                + ")";
        }
        S3Calls calls = CALLS.get(s3a);
        if (calls == null) {
            calls = SdkS3Calls.of(s3a, "deltaguard LogStore");
            CALLS.put(s3a, calls);
        }
        return new S3Target(s3a, calls, s3a.getBucket(),
            s3a.pathToKey(qualified), qualified, endpoint);
    }

    /** The S3A filesystem. */
    S3AFileSystem fs() {
        return fs;
    }

    /** S3 requests through S3A's own client. */
    S3Calls calls() {
        return calls;
    }

    String bucket() {
        return bucket;
    }

    /** The object key of the path. */
    String key() {
        return key;
    }

    /** The fully qualified path. */
    Path qualified() {
        return qualified;
    }

    /** The configured endpoint, or a description of the default, for messages. */
    String endpoint() {
        return endpoint;
    }
}
