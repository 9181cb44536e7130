package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * The store's blind-append checksum rule on the cases of {@code blind-append-checksums.json},
 * which {@code tests/test_python_checksum.py} runs through the Python committer's rule too: both
 * must give each case's expected checksum exactly, or none where it is null.
 */
class BlindAppendChecksumTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static JsonNode cases() throws IOException {
        try (InputStream in = BlindAppendChecksumTest.class.getResourceAsStream(
                "/blind-append-checksums.json")) {
            assertNotNull(in, "blind-append-checksums.json on the test classpath");
            return JSON.readTree(in).get("cases");
        }
    }

    static byte[] previous(JsonNode c) throws IOException {
        JsonNode previous = c.get("previous");
        String text = previous.isTextual() ? previous.asText() : JSON.writeValueAsString(previous);
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static List<String> actions(JsonNode c) {
        List<String> out = new ArrayList<>();
        c.get("actions").forEach(a -> out.add(a.asText()));
        return out;
    }

    @Test
    void everyCaseGivesItsExpectedChecksumOrNone() throws IOException {
        int derived = 0;
        for (JsonNode c : cases()) {
            String name = c.get("name").asText();
            byte[] out = BlindAppendChecksum.derive(previous(c), actions(c));
            JsonNode expected = c.get("expected");
            if (expected.isNull()) {
                assertNull(out, name);
                continue;
            }
            assertNotNull(out, name);
            String text = new String(out, StandardCharsets.UTF_8);
            assertEquals(1, text.split("\n", -1).length - 1, name + ": one JSON line");
            assertEquals(expected, JSON.readTree(text), name);
            derived++;
        }
        assertEquals(2, derived, "the derivable cases all ran");
    }
}
