package io.deltaguard.logstore;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Where a Delta log path lives in S3, resolved through the S3A filesystem that serves the path,
 * so the LogStore uses exactly S3A's endpoint, credentials, region and path-style settings
 * (including per-bucket {@code fs.s3a.bucket.<name>.*} overrides). Works for s3:// as well as
 * s3a:// paths, as long as the scheme is served by S3AFileSystem ({@code fs.s3.impl}).
 *
 * @param fs the S3A filesystem
 * @param client S3A's own SDK v2 client (same connection pool and retry policy)
 * @param bucket the bucket
 * @param key the object key of the path
 * @param qualified the fully qualified path
 * @param endpoint the configured endpoint, or a description of the default, for messages
 */
record S3Target(S3AFileSystem fs, S3Client client, String bucket, String key, Path qualified,
                String endpoint) {

    static S3Target resolve(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        while (!(fs instanceof S3AFileSystem) && fs instanceof FilterFileSystem filter) {
            fs = filter.getRawFileSystem();
        }
        if (!(fs instanceof S3AFileSystem s3a)) {
            throw new IOException("deltaguard's S3 LogStore needs the path " + path + " to be "
                + "served by org.apache.hadoop.fs.s3a.S3AFileSystem, but its scheme is served by "
                + fs.getClass().getName() + ". Set fs." + path.toUri().getScheme()
                + ".impl=org.apache.hadoop.fs.s3a.S3AFileSystem.");
        }
        Path qualified = s3a.makeQualified(path);
        String endpoint = s3a.getConf().getTrimmed("fs.s3a.endpoint", "");
        if (endpoint.isEmpty()) {
            endpoint = "AWS S3 (region " + s3a.getConf().getTrimmed("fs.s3a.endpoint.region", "default")
                + ")";
        }
        return new S3Target(s3a, s3a.getS3AInternals().getAmazonS3Client("deltaguard LogStore"),
            s3a.getBucket(), s3a.pathToKey(qualified), qualified, endpoint);
    }

    /** The key of this path's parent directory, without a trailing slash. */
    String parentKey() {
        int slash = key.lastIndexOf('/');
        return slash < 0 ? "" : key.substring(0, slash);
    }
}
