package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.LinkedHashMap;
import java.util.Map;

import com.codahale.metrics.MetricRegistry;
import org.junit.jupiter.api.Test;

/**
 * {@link CommitMetrics#observe} around the conditional create, as the stores run it: the
 * outcome from how the commit ended, attempts and settles from the protocol's tally, every
 * commit timed; what the commit throws is rethrown unchanged. No SparkEnv here: counting works
 * without one (registration is skipped).
 */
class CommitMetricsTest {
    private static final String KEY = "t/_delta_log/00000000000000000001.json";
    private static final byte[] OURS = "ours\n".getBytes(StandardCharsets.UTF_8);

    private static Map<String, Long> counts() {
        MetricRegistry registry = CommitMetricsRegistry.get().registry();
        Map<String, Long> out = new LinkedHashMap<>();
        registry.getCounters().forEach((name, counter) -> out.put(name, counter.getCount()));
        out.put(CommitMetricsRegistry.LATENCY,
            registry.getTimers().get(CommitMetricsRegistry.LATENCY).getCount());
        return out;
    }

    private static Map<String, Long> delta(Map<String, Long> before) {
        Map<String, Long> out = new LinkedHashMap<>();
        counts().forEach((name, now) -> {
            if (now - before.get(name) != 0) {
                out.put(name, now - before.get(name));
            }
        });
        return out;
    }

    private static void commit(FakeS3 s3) throws IOException {
        CommitMetrics.observe(CommitMark.CONDITIONAL, "s3a://b/" + KEY, 1, tally ->
            new ConditionalCreate(s3.calls(), 3, new Backoff(1, 2)).tallying(tally)
                .create("b", KEY, OURS));
    }

    @Test
    void aCleanCommitIsOneCommitOneAttempt() throws IOException {
        Map<String, Long> before = counts();
        commit(new FakeS3(true));
        assertEquals(Map.of("commits", 1L, "attempts", 1L, "commit_latency", 1L), delta(before));
    }

    @Test
    void aLostResponseSettledByReadBackIsACommitAndASettle() throws IOException {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.DROP_RESPONSE);
        Map<String, Long> before = counts();
        commit(s3);
        assertEquals(Map.of("commits", 1L, "attempts", 1L, "settles", 1L, "commit_latency", 1L),
            delta(before));
    }

    @Test
    void anotherWritersObjectIsAConflictAndRethrown() {
        FakeS3 s3 = new FakeS3(true);
        s3.objects.put(KEY, "theirs\n".getBytes(StandardCharsets.UTF_8));
        Map<String, Long> before = counts();
        assertThrows(FileAlreadyExistsException.class, () -> commit(s3));
        assertEquals(Map.of("conflicts", 1L, "attempts", 1L, "commit_latency", 1L),
            delta(before));
    }

    @Test
    void anUnsettledCreateIsAnUnknownOutcome() {
        FakeS3 s3 = new FakeS3(true);
        for (int i = 0; i < 3; i++) {
            s3.script.add(FakeS3.Fault.ERROR_503);
        }
        Map<String, Long> before = counts();
        assertThrows(CommitOutcomeUnknownException.class, () -> commit(s3));
        assertEquals(Map.of("outcomes_unknown", 1L, "attempts", 3L, "commit_latency", 1L),
            delta(before));
    }

    @Test
    void aRefusedFirstPutIsAFailure() {
        FakeS3 s3 = new FakeS3(true);
        s3.script.add(FakeS3.Fault.ERROR_403);
        Map<String, Long> before = counts();
        assertThrows(IOException.class, () -> commit(s3));
        assertEquals(Map.of("failures", 1L, "attempts", 1L, "commit_latency", 1L),
            delta(before));
    }
}
