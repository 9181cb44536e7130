package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/**
 * {@link CheckpointExists}: the same answer as S3A's {@code exists} (an object with the key, or
 * a key under {@code key/}), whatever else starts with the key, and one LIST unless a key sorts
 * between {@code key} and {@code key/}.
 */
class CheckpointExistsTest {
    /** What S3A's exists answers: the file, or the directory (any key under key + "/"). */
    private static boolean expected(FakeS3 s3, String key) {
        return s3.objects.containsKey(key)
            || s3.objects.keySet().stream().anyMatch(k -> k.startsWith(key + "/"));
    }

    private static int lists(FakeS3 s3, Runnable call) {
        int before = s3.requests.size();
        call.run();
        return (int) s3.requests.subList(before, s3.requests.size()).stream()
            .filter(r -> r.startsWith("LIST ")).count();
    }

    private static boolean exists(FakeS3 s3, String key) {
        try {
            return CheckpointExists.exists(s3.calls(), "b", key);
        } catch (S3Failure e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void theStreamingLogCasesTakeOneList() {
        FakeS3 s3 = new FakeS3(true);
        for (String key : List.of("c/offsets/0", "c/offsets/1", "c/offsets/10", "c/commits/",
                "c/sources/0/0", "c/metadata")) {
            s3.objects.put(key, new byte[] {1});
        }
        String[][] cases = {
            {"c/offsets/1", "true"},       // the file (offsets/10 sorts after it)
            {"c/offsets/2", "false"},      // the next batch: nothing starts with it
            {"c/offsets", "true"},         // the directory, as a common prefix
            {"c/commits", "true"},         // a directory marker only
            {"c/sources/0", "true"},       // a directory with a file
            {"c/metadata", "true"},
            {"c/state", "false"},
        };
        for (String[] c : cases) {
            boolean[] answer = new boolean[1];
            int n = lists(s3, () -> answer[0] = exists(s3, c[0]));
            assertEquals(Boolean.parseBoolean(c[1]), answer[0], c[0]);
            assertEquals(1, n, c[0] + ": requests " + s3.requests);
            assertEquals(expected(s3, c[0]), answer[0], c[0]);
        }
    }

    @Test
    void aKeyBetweenTheFileAndTheDirectoryTakesASecondList() {
        FakeS3 s3 = new FakeS3(true);
        s3.objects.put("c/offsets/5-x", new byte[] {1});
        assertEquals(2, lists(s3, () -> assertEquals(false, exists(s3, "c/offsets/5"))));
        s3.objects.put("c/offsets/5/deep", new byte[] {1});
        assertEquals(2, lists(s3, () -> assertEquals(true, exists(s3, "c/offsets/5"))));
        s3.objects.put("c/offsets/5", new byte[] {1});
        assertEquals(1, lists(s3, () -> assertEquals(true, exists(s3, "c/offsets/5"))));
    }

    @Test
    void randomKeysAgreeWithS3AsAnswer() {
        // Names from characters on both sides of '/' in byte order ('-', '.', '0', 'a').
        String[] parts = {"a", "a-", "a.", "a0", "a/", "a/b", "a-/b", "a./c", "b", "0", "-"};
        Random random = new Random(44);
        for (int trial = 0; trial < 300; trial++) {
            FakeS3 s3 = new FakeS3(true);
            s3.pageSize = 1 + random.nextInt(3);
            List<String> keys = new ArrayList<>();
            int count = random.nextInt(8);
            for (int i = 0; i < count; i++) {
                String key = "c/" + parts[random.nextInt(parts.length)]
                    + (random.nextBoolean() ? parts[random.nextInt(parts.length)] : "");
                keys.add(key);
                s3.objects.put(key, new byte[] {1});
            }
            for (String asked : List.of("c/a", "c/a-", "c/a.", "c/a0", "c/b", "c/0", "c/-", "c/z",
                    "c/a/b", "c")) {
                assertEquals(expected(s3, asked), exists(s3, asked), asked + " in " + keys);
            }
        }
    }
}
