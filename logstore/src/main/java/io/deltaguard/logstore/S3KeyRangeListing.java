package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * One key range of one S3 directory, listed with ListObjectsV2 {@code start-after} through S3A's
 * own client (the endpoint, credentials and retry policy S3A reads the table with): the entries
 * whose names {@code n} satisfy {@code after < n <= upTo}, in S3's order (UTF-8 bytes), each
 * page fetched lazily. {@code deltaguard orphans --engine spark} lists one large directory as
 * several such ranges in several Spark tasks at once ({@code io.deltaguard.orphans.TableLister}).
 *
 * <p><b>Why the ranges of a directory list each entry exactly once.</b> The bounds of a
 * directory's ranges are names without a {@code /} (file names of that directory, taken from the
 * Delta log), so they split the directory's keys {@code D/} + name into consecutive, disjoint
 * intervals whose union is every key of {@code D/}: {@code (-inf, b1], (b1, b2], ..., (bk, +inf)}.
 * A file key lies in exactly one interval. A sub-directory {@code D/s/} (an S3 common prefix)
 * stands for the keys that start with {@code D/s/}, which form one contiguous interval of the
 * key order; no bound lies inside it (a bound inside would start with {@code s/} and so contain a
 * {@code /}), so all its keys lie in one range. S3 returns the common prefix to the range whose
 * {@code start-after} is below its keys (and to no other), and this class keeps it in the range
 * whose upper bound is at or above {@code s/} (compared with its {@code /}: a bound such as
 * {@code s-x} sorts between {@code s} and {@code s/}, and the keys of {@code D/s/} are above it;
 * {@code s/} sorts before every key of {@code D/s/} and, no bound lying inside, every key is
 * then at or below the bound). So each file and each
 * sub-directory is emitted by exactly one range, and the sub-directory is walked by that range's
 * task alone. An empty bound string is not allowed; {@code null} means unbounded.
 *
 * <p>Entries are {@link FileStatus}es as Hadoop's {@code listStatus} gives them: files with
 * their size and modification time, sub-directories with length and time 0. A directory marker
 * (the key {@code D/} itself) and keys with an empty name ({@code D//x}) are skipped, as S3A
 * does. A directory that does not exist lists as empty. A failed request becomes an
 * {@link java.io.UncheckedIOException} naming the directory (S3A's client has already retried it).
 */
public final class S3KeyRangeListing extends S3PagedListing {
    private final S3Calls client;
    private final String bucket;
    private final String prefix;
    private final Path dir;
    private final long blockSize;
    private final byte[] upTo;
    private final String after;

    private S3KeyRangeListing(S3Calls client, String bucket, String prefix, Path dir,
                              long blockSize, String after, String upTo) {
        this.client = client;
        this.bucket = bucket;
        this.prefix = prefix;
        this.dir = dir;
        this.blockSize = blockSize;
        this.after = after;
        this.upTo = upTo == null ? null : upTo.getBytes(StandardCharsets.UTF_8);
    }

    /** Whether S3A serves {@code dir} (only then can it be listed in ranges). */
    public static boolean servedByS3A(Path dir, Configuration conf) throws IOException {
        return S3Target.servedByS3A(dir, conf);
    }

    /**
     * The entries of the directory {@code dir} whose names sort after {@code after} and at or
     * before {@code upTo} (either null: unbounded); see the class comment. Throws IOException
     * if S3A does not serve {@code dir}.
     */
    public static Iterator<FileStatus> list(Path dir, Configuration conf, String after,
                                            String upTo) throws IOException {
        S3Target target = S3Target.resolve(dir, conf);
        return list(target.calls(), target.bucket(), target.key(), target.qualified(),
            target.fs().getDefaultBlockSize(target.qualified()), after, upTo);
    }

    /** {@link #list(Path, Configuration, String, String)} through {@code client}, for the
     * directory at {@code key} in {@code bucket} (qualified as {@code dir}). */
    static Iterator<FileStatus> list(S3Calls client, String bucket, String key, Path dir,
                                     long blockSize, String after, String upTo) {
        if ("".equals(after) || "".equals(upTo)) {
            throw new IllegalArgumentException("an empty range bound; use null for none");
        }
        String prefix = key.isEmpty() || key.endsWith("/") ? key : key + "/";
        return new S3KeyRangeListing(client, bucket, prefix, dir, blockSize, after, upTo);
    }

    /**
     * Whether {@code sortName} (a file's name, or a sub-directory's name with its {@code /})
     * sorts after the range's upper bound, in UTF-8 byte order as S3 sorts keys.
     */
    private boolean beyond(String sortName) {
        return upTo != null && sortsAfter(sortName, upTo);
    }

    /** Whether {@code name} sorts after {@code bound} (UTF-8 bytes, unsigned: S3's key order). */
    private static boolean sortsAfter(String name, byte[] bound) {
        return S3ListPage.compareUtf8(name.getBytes(StandardCharsets.UTF_8), bound) > 0;
    }

    /**
     * Whether the entry {@code name} of a directory (a sub-directory compared with its
     * {@code /}) is in the range {@code (after, upTo]} (either null: unbounded), the rule this
     * class applies through S3; for a store read whole and filtered.
     */
    public static boolean inRange(String name, boolean isDirectory, String after, String upTo) {
        String sortName = isDirectory ? name + "/" : name;
        return (after == null || sortsAfter(sortName, after.getBytes(StandardCharsets.UTF_8)))
            && (upTo == null || !sortsAfter(sortName, upTo.getBytes(StandardCharsets.UTF_8)));
    }

    private Path child(String name) {
        return new Path(dir, new Path(null, null, name)); // a ':' in a name stays a name
    }

    @Override
    protected S3ListPage request(String continuationToken) throws S3Failure {
        return continuationToken == null
            ? client.list(bucket, prefix, "/", after == null ? null : prefix + after, null, 0)
            : client.list(bucket, prefix, "/", null, continuationToken, 0);
    }

    @Override
    protected boolean accept(S3ListPage response) {
        for (S3ListPage.Entry o : response.inKeyOrder()) {
            // a directory's name is compared with the bound with its '/', as S3 sorts it
            String sortName = o.key.substring(prefix.length());
            String name = o.isDirectory ? sortName.substring(0, sortName.length() - 1) : sortName;
            if (name.isEmpty()) {
                continue; // the directory marker, or "D//" keys
            }
            if (beyond(sortName)) {
                return false; // every later entry is beyond it too
            }
            page.add(o.isDirectory
                ? new FileStatus(0, true, 1, 0, 0, child(name))
                : new FileStatus(o.size, false, 1, blockSize, o.lastModifiedMs, child(name)));
        }
        return true;
    }

    @Override
    protected String describe() {
        return dir + " after " + after;
    }
}
