package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Collections;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What deltaguard's checkpoint file managers send for one {@code createAtomic} (Delta's N.crc,
 * streaming checkpoint files): one PUT at close and nothing before it, conditional without
 * overwrite, nothing at all on cancel, and Spark's own stream past the size cap.
 */
class CheckpointPutTest {
    private static final String CRC = "t/_delta_log/00000000000000000007.crc";
    private static final byte[] BODY = "{\"numFiles\":3}\n".getBytes(StandardCharsets.UTF_8);

    private FakeS3 s3;
    private ByteArrayOutputStream fallbackBytes;
    private boolean fallbackCancelled;

    @BeforeEach
    void freshStore() {
        ConditionalWriteVerifier.resetForTests();
        s3 = new FakeS3(true);
        fallbackBytes = null;
        fallbackCancelled = false;
    }

    private CheckpointPut put(boolean overwrite, long maxBytes) {
        Configuration conf = new Configuration(false);
        conf.set(LogStoreSettings.key(LogStoreSettings.VERIFY_CONDITIONAL_WRITES), "false");
        conf.set(LogStoreSettings.key(LogStoreSettings.CHECKPOINT_PUT_MAX_BYTES),
            Long.toString(maxBytes));
        return new CheckpointPut(s3.calls(), "fake", "b", CRC, LogStoreSettings.from(conf),
            overwrite, new CheckpointPut.Fallback() {
                @Override
                public OutputStream open() {
                    fallbackBytes = new ByteArrayOutputStream();
                    return fallbackBytes;
                }

                @Override
                public void cancel(OutputStream opened) {
                    fallbackCancelled = true;
                }
            });
    }

    @Test
    void createIsOneConditionalPutAtCloseAndNothingBefore() throws IOException {
        CheckpointPut out = put(false, 1 << 20);
        out.write(BODY, 0, 5);
        out.write(BODY, 5, BODY.length - 5);
        assertEquals(Collections.emptyList(), s3.requests, "nothing is visible before close");
        out.close();
        out.close();
        assertEquals(Collections.singletonList("PUT " + CRC + " If-None-Match"), s3.requests);
        assertArrayEquals(BODY, s3.objects.get(CRC));
    }

    @Test
    void createNeverReplacesAnotherWritersFile() {
        byte[] theirs = "{\"numFiles\":9}\n".getBytes(StandardCharsets.UTF_8);
        s3.objects.put(CRC, theirs);
        CheckpointPut out = put(false, 1 << 20);
        assertThrows(FileAlreadyExistsException.class, () -> {
            out.write(BODY, 0, BODY.length);
            out.close();
        });
        out.cancel();
        assertArrayEquals(theirs, s3.objects.get(CRC));
    }

    @Test
    void lostResponseOfOurOwnPutIsSuccess() throws IOException {
        s3.script.add(FakeS3.Fault.DROP_RESPONSE);
        CheckpointPut out = put(false, 1 << 20);
        out.write(BODY, 0, BODY.length);
        out.close();
        assertArrayEquals(BODY, s3.objects.get(CRC));
    }

    @Test
    void overwriteIsOnePlainPut() throws IOException {
        s3.objects.put(CRC, "old".getBytes(StandardCharsets.UTF_8));
        CheckpointPut out = put(true, 1 << 20);
        out.write(BODY, 0, BODY.length);
        out.close();
        assertEquals(Collections.singletonList("PUT " + CRC), s3.requests);
        assertArrayEquals(BODY, s3.objects.get(CRC));
    }

    @Test
    void cancelSendsNothing() throws IOException {
        CheckpointPut out = put(false, 1 << 20);
        out.write(BODY, 0, BODY.length);
        out.cancel();
        out.close();
        assertEquals(Collections.emptyList(), s3.requests);
        assertTrue(s3.objects.isEmpty());
    }

    @Test
    void pastTheCapTheBytesGoThroughSparksOwnStream() throws IOException {
        CheckpointPut out = put(false, 8);
        out.write(BODY, 0, 4);
        assertEquals(null, fallbackBytes, "still in memory");
        out.write(BODY, 4, BODY.length - 4);
        out.close();
        assertArrayEquals(BODY, fallbackBytes.toByteArray(), "the buffered bytes first, in order");
        assertEquals(Collections.emptyList(), s3.requests, "no PUT of ours");

        CheckpointPut cancelled = put(false, 8);
        cancelled.write(BODY, 0, BODY.length);
        cancelled.cancel();
        assertTrue(fallbackCancelled, "Spark's stream is cancelled, not closed");
    }
}
