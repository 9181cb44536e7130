package io.deltaguard.logstore;

import java.util.List;

/** One ListObjectsV2 page, SDK-neutral: files and common prefixes in key order. */
final class S3ListPage {
    /** One object of a listing. */
    static final class Entry {
        final String key;
        final long size;
        final long lastModifiedMs;

        Entry(String key, long size, long lastModifiedMs) {
            this.key = key;
            this.size = size;
            this.lastModifiedMs = lastModifiedMs;
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
}
