package io.deltaguard.logstore;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** One ListObjectsV2 page, SDK-neutral: files and common prefixes in key order. */
final class S3ListPage {
    /** One object of a listing, or (in {@link #inKeyOrder()}) one common prefix. */
    static final class Entry {
        final String key;
        final long size;
        final long lastModifiedMs;
        /** A common prefix (its key ends with the delimiter; size and time 0). */
        final boolean isDirectory;

        Entry(String key, long size, long lastModifiedMs) {
            this(key, size, lastModifiedMs, false);
        }

        private Entry(String key, long size, long lastModifiedMs, boolean isDirectory) {
            this.key = key;
            this.size = size;
            this.lastModifiedMs = lastModifiedMs;
            this.isDirectory = isDirectory;
        }
    }

    final List<Entry> files;
    /** Common prefixes, each ending with the delimiter. */
    final List<String> prefixes;
    /** The next page's token, or null when this is the last page. */
    final String nextToken;

    S3ListPage(List<Entry> files, List<String> prefixes, String nextToken) {
        this.files = files;
        this.prefixes = prefixes;
        this.nextToken = nextToken;
    }

    boolean isEmpty() {
        return files.isEmpty() && prefixes.isEmpty();
    }

    /** The files and the common prefixes of this page merged into S3's key order. */
    List<Entry> inKeyOrder() {
        List<Entry> out = new ArrayList<>(files.size() + prefixes.size());
        int f = 0;
        int d = 0;
        while (f < files.size() || d < prefixes.size()) {
            if (d == prefixes.size()
                    || (f < files.size() && compareKeys(files.get(f).key, prefixes.get(d)) < 0)) {
                out.add(files.get(f++));
            } else {
                out.add(new Entry(prefixes.get(d++), 0, 0, true));
            }
        }
        return out;
    }

    /** S3's key order: the keys' UTF-8 bytes, unsigned. */
    static int compareKeys(String a, String b) {
        return compareUtf8(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    /** Unsigned lexicographic order of byte strings (the jar targets Java 8: no
     * {@code Arrays.compareUnsigned}). */
    static int compareUtf8(byte[] a, byte[] b) {
        int n = Math.min(a.length, b.length);
        for (int i = 0; i < n; i++) {
            int c = (a[i] & 0xff) - (b[i] & 0xff);
            if (c != 0) {
                return c;
            }
        }
        return a.length - b.length;
    }
}
