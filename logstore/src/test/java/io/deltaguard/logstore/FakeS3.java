package io.deltaguard.logstore;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An in-memory object store with a script of faults for the next PUTs, SDK-free. It implements
 * If-None-Match the way S3 does (atomically, 412), or ignores it when {@code honourIfNoneMatch}
 * is false. Each SDK generation's fake client ({@code ScriptedSdk} in src/test-sdk1 and
 * src/test-sdk2) turns its requests into calls here and its failures into that SDK's exceptions,
 * so the protocol tests run through the real adapter ({@code SdkS3Calls}) of each jar. The same
 * scenarios run end to end against LocalStack through the fault proxy in tests/.
 */
class FakeS3 {
    /**
     * What to do with one PUT: throw before storing, store then throw (lost response), or pass.
     * ERROR_412 answers PreconditionFailed and stores nothing (a concurrent create that is not
     * readable, or was deleted). For a GET ({@link #getScript}): ERROR_503, ERROR_403 and
     * RESET_BEFORE answer so instead of reading; DROP_RESPONSE reads, then loses the answer.
     */
    enum Fault { NONE, ERROR_409, ERROR_412, ERROR_503, ERROR_403, RESET_BEFORE, DROP_RESPONSE }

    /** An HTTP error answer. */
    static final class HttpError extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;
        final String code;

        HttpError(int status, String code) {
            super(code);
            this.status = status;
            this.code = code;
        }
    }

    /** No answer: the connection broke before or after the server acted. */
    static final class NoAnswer extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoAnswer(String message) {
            super(message);
        }
    }

    /** One ListObjectsV2 answer. */
    record Listing(List<String> keys, List<Long> sizes, List<String> prefixes, boolean truncated,
                   String nextToken) {}

    final Map<String, byte[]> objects = new ConcurrentHashMap<>();
    final Deque<Fault> script = new ArrayDeque<>();
    /** Faults for the next GETs, in order. */
    final Deque<Fault> getScript = new ArrayDeque<>();
    final boolean honourIfNoneMatch;
    /** Runs before each PUT is applied (e.g. a concurrent writer). */
    Runnable beforePut = () -> { };
    int puts;
    int gets;
    /** Every request in arrival order: "PUT key", "PUT key If-None-Match", "GET key", ... */
    final List<String> requests = new ArrayList<>();
    int pageSize = 1000;

    FakeS3(boolean honourIfNoneMatch) {
        this.honourIfNoneMatch = honourIfNoneMatch;
    }

    /** The protocol's view of this store, through the SDK adapter of the jar under test. */
    S3Calls calls() {
        return ScriptedSdk.calls(this);
    }

    /** The user metadata each stored object's PUT carried (the last PUT's). */
    final Map<String, Map<String, String>> metadata = new ConcurrentHashMap<>();
    /** The user metadata of every PUT, in arrival order (failed attempts included). */
    final List<Map<String, String>> putMetadata = new ArrayList<>();

    synchronized void put(String key, boolean ifNoneMatch, byte[] body) {
        put(key, ifNoneMatch, body, Map.of());
    }

    synchronized void put(String key, boolean ifNoneMatch, byte[] body,
                          Map<String, String> userMetadata) {
        putMetadata.add(Map.copyOf(userMetadata));
        beforePut.run();
        puts++;
        requests.add("PUT " + key + (ifNoneMatch ? " If-None-Match" : ""));
        Fault fault = script.isEmpty() ? Fault.NONE : script.poll();
        switch (fault) {
            case ERROR_409: throw new HttpError(409, "ConditionalRequestConflict");
            case ERROR_412: throw new HttpError(412, "PreconditionFailed");
            case ERROR_503: throw new HttpError(503, "SlowDown");
            case ERROR_403: throw new HttpError(403, "AccessDenied");
            case RESET_BEFORE: throw new NoAnswer("Connection reset");
            default: break;
        }
        if (ifNoneMatch && honourIfNoneMatch && objects.containsKey(key)) {
            throw new HttpError(412, "PreconditionFailed");
        }
        objects.put(key, body);
        metadata.put(key, Map.copyOf(userMetadata));
        if (fault == Fault.DROP_RESPONSE) {
            throw new NoAnswer("Unexpected end of stream (response lost)");
        }
    }

    /** The stored bytes, or null (the SDK fake answers 404 NoSuchKey). */
    synchronized byte[] get(String key) {
        gets++;
        requests.add("GET " + key);
        Fault fault = getScript.isEmpty() ? Fault.NONE : getScript.poll();
        switch (fault) {
            case ERROR_503: throw new HttpError(503, "SlowDown");
            case ERROR_403: throw new HttpError(403, "AccessDenied");
            case RESET_BEFORE: throw new NoAnswer("Connection reset");
            case DROP_RESPONSE: throw new NoAnswer("Unexpected end of stream (response lost)");
            case NONE: break;
            default: throw new IllegalArgumentException("no such GET fault: " + fault);
        }
        return objects.get(key);
    }

    synchronized void delete(String key) {
        requests.add("DELETE " + key);
        objects.remove(key);
    }

    /**
     * ListObjectsV2 as S3 answers it: keys in byte order after {@code start-after}, rolled up
     * into common prefixes at the delimiter, at most {@link #pageSize} entries a page (contents
     * and prefixes together), continued by a token.
     */
    synchronized Listing list(String prefix, String delimiter, String startAfter, String token,
                              Integer maxKeys) {
        prefix = prefix == null ? "" : prefix;
        requests.add("LIST " + prefix);
        String after = token != null ? token : startAfter == null ? "" : startAfter;
        int limit = maxKeys == null || maxKeys <= 0 ? pageSize : Math.min(pageSize, maxKeys);
        List<String> keys = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        List<String> prefixes = new ArrayList<>();
        String last = null;
        boolean truncated = false;
        for (String key : new TreeMap<>(objects).tailMap(after, false).keySet()) {
            if (!key.startsWith(prefix)) {
                continue;
            }
            int cut = delimiter == null ? -1 : key.indexOf(delimiter, prefix.length());
            String entry = cut < 0 ? key : key.substring(0, cut + 1);
            if (last != null && cut >= 0 && entry.equals(last)) {
                continue; // rolled up into the common prefix already listed
            }
            if (keys.size() + prefixes.size() == limit) {
                truncated = true;
                break;
            }
            if (cut < 0) {
                keys.add(key);
                sizes.add((long) objects.get(key).length);
            } else {
                prefixes.add(entry);
            }
            last = entry;
        }
        // A token resumes after the last entry, past a prefix's whole subtree.
        String next = !prefixes.isEmpty() && last == prefixes.get(prefixes.size() - 1)
            ? last + "\uffff" : last;
        return new Listing(keys, sizes, prefixes, truncated, truncated ? next : null);
    }
}
