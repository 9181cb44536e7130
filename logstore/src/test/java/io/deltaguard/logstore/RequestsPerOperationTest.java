package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

import io.delta.storage.CloseableIterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What each LogStore operation sends to S3, request by request (the store's side of "requests
 * per Spark append" in docs/design/logstore.md): a create is one conditional PUT with no probe before
 * it, an overwrite one plain PUT (no temp file, no COPY + DELETE), a read one GET (no HEAD), a
 * listFrom one LIST, and the fail-closed verification runs once per JVM and bucket.
 */
class RequestsPerOperationTest {
    private static final String LOG = "t/_delta_log/";
    private static final String COMMIT = LOG + "00000000000000000003.json";
    private static final byte[] BODY = "{\"add\":{}}\n{\"commitInfo\":{}}\n"
        .getBytes(StandardCharsets.UTF_8);

    private FakeS3 s3;

    @BeforeEach
    void freshStore() {
        ConditionalWriteVerifier.resetForTests();
        s3 = new FakeS3(true);
    }

    private static LogStoreSettings settings(boolean verify) {
        Configuration conf = new Configuration(false);
        conf.set(LogStoreSettings.key(LogStoreSettings.VERIFY_CONDITIONAL_WRITES),
            Boolean.toString(verify));
        conf.set(LogStoreSettings.key(LogStoreSettings.BASE_DELAY_MS), "1");
        conf.set(LogStoreSettings.key(LogStoreSettings.MAX_DELAY_MS), "2");
        return LogStoreSettings.from(conf);
    }

    private void write(String key, byte[] body, boolean overwrite, boolean verify)
            throws IOException {
        S3ConditionalLogStore.write(s3.calls(), settings(verify), "fake", "b", key, body,
            overwrite);
    }

    @Test
    void createIsOneConditionalPutWithNoProbe() throws IOException {
        write(COMMIT, BODY, false, false);
        assertEquals(Collections.singletonList("PUT " + COMMIT + " If-None-Match"), s3.requests);
        assertArrayEquals(BODY, s3.objects.get(COMMIT));
    }

    @Test
    void verificationRunsOncePerBucketThenCreatesAreOnePut() throws IOException {
        write(COMMIT, BODY, false, true);
        String next = LOG + "00000000000000000004.json";
        s3.requests.clear();
        write(next, BODY, false, true);
        assertEquals(Collections.singletonList("PUT " + next + " If-None-Match"), s3.requests,
            "a verified bucket is not probed again");
    }

    @Test
    void overwriteIsOnePlainPutWithoutTempFileOrRename() throws IOException {
        String key = LOG + "_last_checkpoint";
        s3.objects.put(key, "{\"version\":0}\n".getBytes(StandardCharsets.UTF_8));
        write(key, BODY, true, true);
        assertEquals(Collections.singletonList("PUT " + key), s3.requests,
            "no probe, no verification, no temp object, no copy or delete");
        assertArrayEquals(BODY, s3.objects.get(key), "last writer wins");
        assertEquals(1, s3.objects.size(), "nothing else was written");
    }

    @Test
    void readIsOneGetAndMissingIsFileNotFound() throws IOException {
        s3.objects.put(COMMIT, BODY);
        ConditionalCreate reads = S3ConditionalLogStore.conditionalCreate(s3.calls(),
            settings(true));
        List<String> lines = new ArrayList<>();
        try (CloseableIterator<String> it = S3LogFiles.read(reads, "b", COMMIT)) {
            it.forEachRemaining(lines::add);
        }
        assertEquals(Arrays.asList("{\"add\":{}}", "{\"commitInfo\":{}}"), lines);
        assertEquals(Collections.singletonList("GET " + COMMIT), s3.requests);
        assertThrows(FileNotFoundException.class,
            () -> S3LogFiles.read(reads, "b", LOG + "_last_checkpoint"));
    }

    @Test
    void readRetriesATransientFailureLikeTheReadBack() throws IOException {
        FakeS3 flaky = new FakeS3(true) {
            private boolean failed;

            @Override
            synchronized byte[] get(String key) {
                if (!failed) {
                    failed = true;
                    requests.add("GET " + key + " (503)");
                    throw new HttpError(503, "SlowDown");
                }
                return super.get(key);
            }
        };
        flaky.objects.put(COMMIT, BODY);
        ConditionalCreate reads = S3ConditionalLogStore.conditionalCreate(flaky.calls(),
            settings(true));
        try (CloseableIterator<String> it = S3LogFiles.read(reads, "b", COMMIT)) {
            assertEquals("{\"add\":{}}", it.next());
        }
        assertEquals(Arrays.asList("GET " + COMMIT + " (503)", "GET " + COMMIT), flaky.requests);
    }

    @Test
    void listFromIsOneListWhenTheLogHasEntries() throws IOException {
        for (int v = 0; v < 5; v++) {
            s3.objects.put(String.format("%s%020d.json", LOG, v), BODY);
        }
        Iterator<FileStatus> it = S3ListFrom.listFrom(s3.calls(), "b", COMMIT,
            new Path("s3a://b/" + COMMIT), 32L << 20);
        List<String> names = new ArrayList<>();
        it.forEachRemaining(s -> names.add(s.getPath().getName()));
        assertEquals(Arrays.asList("00000000000000000003.json", "00000000000000000004.json"),
            names);
        assertEquals(Collections.singletonList("LIST " + LOG), s3.requests);
    }
}
