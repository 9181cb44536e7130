package io.deltaguard.logstore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.hadoop.fs.FileStatus;

/**
 * A listing of one S3 directory as {@link FileStatus}es, fetched one ListObjectsV2 page at a
 * time as the caller iterates (the paging {@link S3ListFrom} and {@link S3KeyRangeListing}
 * share). A failed request becomes an {@link UncheckedIOException} naming the listing (S3A's
 * client has already retried it).
 */
abstract class S3PagedListing implements Iterator<FileStatus> {
    /** The entries fetched and not yet returned. */
    protected final Deque<FileStatus> page = new ArrayDeque<>();
    private String continuationToken;
    private boolean exhausted;

    /** The first page ({@code continuationToken} null) or the one the token continues. */
    protected abstract S3ListPage request(String continuationToken) throws S3Failure;

    /**
     * Adds what the listing keeps of {@code response} to {@link #page}; returns false if no
     * later page can hold an entry it keeps (the listing ends after this page).
     */
    protected abstract boolean accept(S3ListPage response);

    /** The listing, for messages ("Listing s3a://b/t failed: ..."). */
    protected abstract String describe();

    /** Fetches and accepts the next page. */
    final void fetchPage() throws S3Failure {
        S3ListPage response = request(continuationToken);
        if (!accept(response) || response.nextToken == null) {
            exhausted = true;
        } else {
            continuationToken = response.nextToken;
        }
    }

    /** True once the last page has been fetched. */
    final boolean exhausted() {
        return exhausted;
    }

    @Override
    public final boolean hasNext() {
        while (page.isEmpty() && !exhausted) {
            try {
                fetchPage();
            } catch (S3Failure e) {
                throw new UncheckedIOException(new IOException(
                    "Listing " + describe() + " failed: " + e.describe(), e));
            }
        }
        return !page.isEmpty();
    }

    @Override
    public final FileStatus next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return page.poll();
    }
}
