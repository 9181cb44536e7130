package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

class SmallPartsTest {
    @Test
    void keyBeforeMakesStartAfterInclusive() {
        String key = "t/_delta_log/00000000000000000010.json";
        String before = S3ListFrom.keyBefore(key);
        assertTrue(before.compareTo(key) < 0);
        assertTrue(before.compareTo("t/_delta_log/00000000000000000009.json") > 0);
        assertEquals("a", S3ListFrom.keyBefore("a\u0000"));
    }

    @Test
    void backoffIsBoundedAndGrows() {
        Backoff b = new Backoff(50, 1000);
        assertEquals(50, b.ceilingMs(1));
        assertEquals(100, b.ceilingMs(2));
        assertEquals(1000, b.ceilingMs(10));
        assertEquals(1000, b.ceilingMs(500));
    }

    @Test
    void settingsDefaultsAndBothPrefixes() {
        Configuration conf = new Configuration(false);
        LogStoreSettings s = LogStoreSettings.from(conf);
        assertTrue(s.verifyConditionalWrites());
        assertEquals(10, s.maxAttempts());
        conf.set("spark.deltaguard.logstore.retry.maxAttempts", "4");
        assertEquals(4, LogStoreSettings.from(conf).maxAttempts());
        conf.set("deltaguard.logstore.retry.maxAttempts", "5");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> LogStoreSettings.from(conf));
        assertTrue(e.getMessage().contains("retry.maxAttempts"), e.getMessage());
    }

    @Test
    void settingsRejectNonsense() {
        Configuration conf = new Configuration(false);
        conf.set("deltaguard.logstore.retry.maxAttempts", "0");
        assertThrows(IllegalArgumentException.class, () -> LogStoreSettings.from(conf));
        conf.set("deltaguard.logstore.retry.maxAttempts", "x");
        assertThrows(IllegalArgumentException.class, () -> LogStoreSettings.from(conf));
    }
}
