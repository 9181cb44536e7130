package io.deltaguard.logstore;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The version checksum {@code N.crc} of a blind append, derived from {@code (N-1).crc} plus the
 * commit's own actions: the JVM twin of deltaguard's Python rule ({@code
 * deltaguard.tools.deltalog.checksum.checksum_after_append}; the two are pinned to the same
 * expected values by {@code BlindAppendChecksumTest} and {@code tests/test_python_checksum.py}),
 * and Delta's own {@code RecordChecksum.computeNewChecksum} restricted to that case.
 *
 * <p><b>Contract.</b> {@link #derive} returns the new checksum's bytes (one JSON line) only when
 * the commit is a blind append Delta itself would count the same way: its actions are one
 * {@code commitInfo} with {@code isBlindAppend = true} and no {@code inCommitTimestamp}, plus
 * {@code add} actions each with a {@code size} and no deletion vector, on a previous checksum
 * with one metadata and one protocol and a table without {@code
 * delta.setTransactionRetentionDuration}. Anything else (a remove, a protocol, metadata,
 * transaction or domain action, CDC files, in-commit timestamps, a {@code lastManifestCommit},
 * Delta's {@code Manual Update}, an unreadable previous checksum) returns null: a checksum is
 * optional, and one that is not exact would be worse than none, since Delta readers treat a
 * mismatch as fatal by default.
 *
 * <p><b>What it holds.</b> {@code numFiles} and {@code tableSizeBytes} grow by the added files;
 * each file-size histogram present in the previous checksum ({@code fileSizeHistogram}, Delta
 * 4.4's name, or the legacy {@code histogramOpt}) gets each file in the bin Delta's {@code
 * FileSizeHistogram.insert} picks; bin 0 of {@code deletedRecordCountsHistogramOpt} counts the
 * new files (no deleted records); protocol, metadata, their counts, {@code setTransactions},
 * {@code domainMetadata} and the deletion-vector totals are carried as they were. {@code txnId}
 * is the commit's. Every other field of the previous checksum ({@code allFiles}, fields of newer
 * Delta versions) is left out, never guessed: all but six fields of a checksum are optional, and
 * a reader validates only those present.
 */
final class BlindAppendChecksum {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> REQUIRED = Arrays.asList(
        "tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol");
    private static final List<String> CARRIED = Arrays.asList(
        "tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "setTransactions",
        "domainMetadata", "metadata", "protocol", "fileSizeHistogram", "histogramOpt",
        "deletedRecordCountsHistogramOpt", "numDeletedRecordsOpt", "numDeletionVectorsOpt");
    private static final List<String> HISTOGRAMS = Arrays.asList("fileSizeHistogram",
        "histogramOpt");

    /**
     * With this table property Delta drops expired {@code setTransactions} from the state, so it
     * never carries them forward incrementally (the full state's list may shrink with time).
     */
    static final String TXN_RETENTION = "delta.setTransactionRetentionDuration";
    /** Delta's {@code ManualUpdate} operation, which Delta never derives a checksum for. */
    private static final String MANUAL_UPDATE = "Manual Update";

    private BlindAppendChecksum() {}

    /**
     * {@code N.crc} for the commit of {@code actions} (Delta's JSON lines of {@code N.json}) on
     * top of {@code previous} ({@code (N-1).crc}'s bytes), or null when the commit is not a blind
     * append this rule covers or the previous checksum is unusable (see the class contract).
     * Never throws on bad input.
     */
    static byte[] derive(byte[] previous, List<String> actions) {
        try {
            return deriveOrNull(previous, actions);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static byte[] deriveOrNull(byte[] previous, List<String> actions) throws IOException {
        JsonNode old = JSON.readTree(new String(previous, StandardCharsets.UTF_8).trim());
        if (old == null || !old.isObject()) {
            return null;
        }
        for (String field : REQUIRED) {
            if (!old.has(field) || old.get(field).isNull()) {
                return null;
            }
        }
        if (!old.get("tableSizeBytes").canConvertToLong()
                || !old.get("numFiles").canConvertToLong()
                || old.get("numMetadata").asLong(-1) != 1 || old.get("numProtocol").asLong(-1) != 1
                || old.path("metadata").path("configuration").has(TXN_RETENTION)) {
            return null;
        }
        String txnId = null;
        boolean blindAppend = false;
        long[] sizes = new long[actions.size()];
        int files = 0;
        for (String line : actions) {
            JsonNode action = JSON.readTree(line);
            if (action == null || !action.isObject() || action.size() != 1) {
                return null;
            }
            if (action.has("commitInfo")) {
                JsonNode info = action.get("commitInfo");
                if (!info.path("isBlindAppend").asBoolean(false) || info.has("inCommitTimestamp")
                        || info.has("lastManifestCommit")
                        || MANUAL_UPDATE.equals(info.path("operation").asText())) {
                    return null;
                }
                blindAppend = true;
                JsonNode id = info.get("txnId");
                txnId = id != null && id.isTextual() ? id.asText() : null;
            } else if (action.has("add")) {
                JsonNode add = action.get("add");
                JsonNode size = add.get("size");
                JsonNode dv = add.get("deletionVector");
                if (size == null || !size.canConvertToLong() || size.asLong() < 0
                        || (dv != null && !dv.isNull())) {
                    return null;
                }
                sizes[files++] = size.asLong();
            } else {
                return null;
            }
        }
        if (!blindAppend) {
            return null;
        }
        ObjectNode out = JSON.createObjectNode();
        if (txnId != null) {
            out.put("txnId", txnId);
        }
        for (String field : CARRIED) {
            if (old.has(field)) {
                out.set(field, old.get(field).deepCopy());
            }
        }
        long bytes = 0;
        for (int i = 0; i < files; i++) {
            bytes += sizes[i];
        }
        out.put("numFiles", old.get("numFiles").asLong() + files);
        out.put("tableSizeBytes", old.get("tableSizeBytes").asLong() + bytes);
        for (String name : HISTOGRAMS) {
            JsonNode histogram = out.get(name);
            if (histogram != null && histogram.isObject()
                    && !withFiles((ObjectNode) histogram, sizes, files)) {
                return null;
            }
        }
        JsonNode deleted = out.get("deletedRecordCountsHistogramOpt");
        if (deleted != null && deleted.isObject()) {
            JsonNode counts = deleted.get("deletedRecordCounts");
            if (counts == null || !counts.isArray() || counts.size() == 0) {
                return null;
            }
            ((ArrayNode) counts).set(0,
                JSON.getNodeFactory().numberNode(counts.get(0).asLong() + files));
        }
        return (JSON.writeValueAsString(out) + "\n").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Adds each file to {@code histogram} in place: bin i holds the sizes from {@code
     * sortedBinBoundaries[i]} (inclusive) up to the next boundary, as Delta's {@code
     * FileSizeHistogram.insert}. False if the histogram is not of that shape.
     */
    private static boolean withFiles(ObjectNode histogram, long[] sizes, int files) {
        JsonNode bounds = histogram.get("sortedBinBoundaries");
        JsonNode counts = histogram.get("fileCounts");
        JsonNode totals = histogram.get("totalBytes");
        if (bounds == null || counts == null || totals == null || !bounds.isArray()
                || !counts.isArray() || !totals.isArray() || bounds.size() == 0
                || counts.size() != bounds.size() || totals.size() != bounds.size()) {
            return false;
        }
        long[] boundaries = new long[bounds.size()];
        for (int i = 0; i < boundaries.length; i++) {
            boundaries[i] = bounds.get(i).asLong();
        }
        for (int f = 0; f < files; f++) {
            int found = Arrays.binarySearch(boundaries, sizes[f]);
            int bin = found >= 0 ? found : -found - 2;
            if (bin < 0) {
                return false;
            }
            ((ArrayNode) counts).set(bin,
                JSON.getNodeFactory().numberNode(counts.get(bin).asLong() + 1));
            ((ArrayNode) totals).set(bin,
                JSON.getNodeFactory().numberNode(totals.get(bin).asLong() + sizes[f]));
        }
        return true;
    }
}
