package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link S3KeyRangeListing}: the ranges a directory's cuts make list every file and every
 * sub-directory exactly once (the argument in its javadoc), whatever the cuts and page size.
 */
class S3KeyRangeListingTest {
    /** Files of "t/" (with sub-directories whose names sit next to the cuts below). */
    private static final List<String> KEYS = List.of(
        "t/", // a directory marker
        "t//empty-name",
        "t/a.parquet",
        "t/part-0001.parquet",
        "t/part-0002.parquet",
        "t/s",
        "t/s-x.parquet",
        "t/s.parquet",
        "t/s/1.parquet",
        "t/s/2.parquet",
        "t/s/deep/3.parquet",
        "t/s0.parquet",
        "t/sub=1/a.parquet",
        "t/x:y.parquet",
        "t/\u00fc.parquet",
        "t/\u00fc/z.parquet",
        "tt/other.parquet");

    /** Names a cut may be: file names of "t/", and names of no key at all. */
    private static final List<String> CUT_POOL = List.of(
        "a.parquet", "part-0001.parquet", "part-0002.parquet", "s", "s-x.parquet", "s-", "s.parquet",
        "s0.parquet", "r", "sub=1", "sub=0", "x:y.parquet", "\u00fc.parquet", "\u00fc", "zzz", "0");

    private static FakeS3 store(int pageSize) {
        FakeS3 s3 = new FakeS3(true);
        s3.pageSize = pageSize;
        for (String key : KEYS) {
            s3.objects.put(key, new byte[] {7});
        }
        return s3;
    }

    private static List<String> range(FakeS3 s3, String after, String upTo) {
        Iterator<FileStatus> it = S3KeyRangeListing.list(
            s3.calls(), "b", "t", new Path("s3a://b/t"), 64, after, upTo);
        List<String> out = new ArrayList<>();
        while (it.hasNext()) {
            FileStatus st = it.next();
            out.add(st.getPath().getName() + (st.isDirectory() ? "/" : ""));
        }
        return out;
    }

    private static List<String> ranges(FakeS3 s3, List<String> cuts) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i <= cuts.size(); i++) {
            out.addAll(range(s3, i == 0 ? null : cuts.get(i - 1), i == cuts.size() ? null : cuts.get(i)));
        }
        return out;
    }

    private static int utf8(String a, String b) {
        return S3ListPage.compareUtf8(
            a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 1000})
    void wholeDirectoryInKeyOrder(int pageSize) {
        assertEquals(List.of("a.parquet", "part-0001.parquet", "part-0002.parquet", "s",
                "s-x.parquet", "s.parquet", "s/", "s0.parquet", "sub=1/", "x:y.parquet",
                "\u00fc.parquet", "\u00fc/"),
            range(store(pageSize), null, null));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 1000})
    void anyCutsListEachEntryExactlyOnce(int pageSize) {
        FakeS3 s3 = store(pageSize);
        List<String> whole = range(s3, null, null);
        Random random = new Random(pageSize);
        for (int trial = 0; trial < 300; trial++) {
            TreeSet<String> chosen = new TreeSet<>(S3KeyRangeListingTest::utf8);
            int n = random.nextInt(5);
            for (int i = 0; i < n; i++) {
                chosen.add(CUT_POOL.get(random.nextInt(CUT_POOL.size())));
            }
            List<String> cuts = new ArrayList<>(chosen);
            assertEquals(whole, ranges(s3, cuts), "cuts " + cuts);
            for (int i = 0; i <= cuts.size(); i++) { // the rule for a store read whole agrees
                String after = i == 0 ? null : cuts.get(i - 1);
                String upTo = i == cuts.size() ? null : cuts.get(i);
                List<String> filtered = new ArrayList<>();
                for (String entry : whole) {
                    boolean dir = entry.endsWith("/");
                    String name = dir ? entry.substring(0, entry.length() - 1) : entry;
                    if (S3KeyRangeListing.inRange(name, dir, after, upTo)) {
                        filtered.add(entry);
                    }
                }
                assertEquals(range(s3, after, upTo), filtered, "range " + after + ", " + upTo);
            }
        }
    }

    @Test
    void aDirectoryGoesToTheRangeItsKeysAreIn() {
        FakeS3 s3 = store(1000);
        // "s-" and "s-x.parquet" sort between "s" and "s/": the keys of s/ are above them
        assertEquals(List.of("a.parquet", "part-0001.parquet", "part-0002.parquet", "s"),
            range(s3, null, "s-"));
        assertEquals(List.of("s-x.parquet", "s.parquet", "s/", "s0.parquet"),
            range(s3, "s-", "s0.parquet"));
    }

    @Test
    void emptyBoundsAreRefused() {
        FakeS3 s3 = store(1000);
        assertThrows(IllegalArgumentException.class, () -> range(s3, "", null));
        assertThrows(IllegalArgumentException.class, () -> range(s3, null, ""));
    }
}
