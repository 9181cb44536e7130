package io.deltaguard.logstore;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import io.delta.storage.CloseableIterator;
import io.delta.storage.LineCloseableIterator;

/**
 * The LogStores' reads and {@code overwrite = true} writes of log files, one S3 request each,
 * through {@link S3Calls} instead of S3A's {@code open}/{@code create} (which add a HEAD, and
 * for a create a LIST, before the GET or PUT). Why a single PUT is a correct overwrite and a
 * single GET a correct read: see the javadoc of {@link S3ConditionalLogStore}, point 6.
 */
final class S3LogFiles {
    private S3LogFiles() {}

    /**
     * The object's lines (UTF-8), as Delta's {@code HadoopFileSystemLogStore.read} returns them,
     * from one GET of the whole object, retried with {@code reads}' budget.
     *
     * @throws FileNotFoundException if the key does not exist (Delta relies on this, e.g. for
     *     a table without {@code _last_checkpoint})
     * @throws IOException if the GET failed after the retry budget
     */
    static CloseableIterator<String> read(ConditionalCreate reads, String bucket, String key)
            throws IOException {
        return lines(readBytes(reads, bucket, key));
    }

    /** {@link #read}'s one GET, as bytes; the same exceptions. */
    static byte[] readBytes(ConditionalCreate reads, String bucket, String key)
            throws IOException {
        String where = "s3://" + bucket + "/" + key;
        Optional<byte[]> body = reads.read(bucket, key, "read " + where);
        if (!body.isPresent()) {
            throw new FileNotFoundException("No such file: " + where);
        }
        return body.get();
    }

    /** The lines (UTF-8) of a file's bytes, as Delta's LogStores return them. */
    static CloseableIterator<String> lines(byte[] body) {
        return new LineCloseableIterator(new BufferedReader(new InputStreamReader(
            new ByteArrayInputStream(body), StandardCharsets.UTF_8)));
    }

    /**
     * One unconditional PutObject of {@code body}: the object holds exactly {@code body}
     * afterwards, or is unchanged if this throws. Retried by the SDK only (S3A configures it);
     * an overwrite is idempotent, so a repeated PUT is harmless.
     *
     * @throws IOException naming the key and the error, if the PUT failed
     */
    static void overwrite(S3Calls s3, String bucket, String key, byte[] body) throws IOException {
        try {
            s3.put(bucket, key, body, "application/json", false);
        } catch (S3Failure e) {
            throw new IOException("Overwriting s3://" + bucket + "/" + key + " failed: "
                + e.describe(), e);
        }
    }
}
