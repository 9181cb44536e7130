package io.deltaguard.logstore;

import java.io.InterruptedIOException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Bounded exponential backoff with full jitter: before attempt {@code n} (n >= 1) it sleeps a
 * uniformly random time in {@code [0, min(maxDelay, base * 2^(n-1))]}. Jitter spreads out writers
 * that failed together (409 conflicts, throttling) so they do not collide again in lock step.
 */
final class Backoff {
    private final long baseDelayMs;
    private final long maxDelayMs;

    Backoff(long baseDelayMs, long maxDelayMs) {
        this.baseDelayMs = baseDelayMs;
        this.maxDelayMs = maxDelayMs;
    }

    /** The upper bound of the delay before retry number {@code retry} (1-based). */
    long ceilingMs(int retry) {
        int shift = Math.min(Math.max(retry - 1, 0), 30);
        long ceiling = baseDelayMs << shift;
        return ceiling <= 0 ? maxDelayMs : Math.min(maxDelayMs, ceiling);
    }

    /** Sleeps before retry number {@code retry}; an interrupt becomes InterruptedIOException. */
    void sleepBefore(int retry) throws InterruptedIOException {
        long delay = ThreadLocalRandom.current().nextLong(ceilingMs(retry) + 1);
        try {
            Thread.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while backing off before retry " + retry);
        }
    }
}
