package io.deltaguard.logstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.FileNotFoundException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link S3ListFrom}: start-after, paging, and directories (what VACUUM's listing needs). */
class S3ListFromTest {
    private static FakeS3 table(int pageSize) {
        FakeS3 s3 = new FakeS3(true);
        s3.pageSize = pageSize;
        for (String key : List.of(
                "t/_delta_log/00000000000000000000.json",
                "t/_delta_log/00000000000000000001.json",
                "t/_delta_log/00000000000000000002.json",
                "t/_delta_log/_sidecars/a.parquet",
                "t/p=0/a.parquet",
                "t/p=0/b.parquet",
                "t/p=1/c.parquet",
                "t/p=1/q=2/d.parquet",
                "t/root.parquet",
                "other/x.parquet")) {
            s3.objects.put(key, new byte[] {1, 2, 3});
        }
        return s3;
    }

    private static List<String> list(FakeS3 s3, String key) throws Exception {
        Iterator<FileStatus> it = S3ListFrom.listFrom(s3.calls(), "b", key, new Path("s3a://b/" + key), 64);
        List<String> out = new ArrayList<>();
        while (it.hasNext()) {
            FileStatus st = it.next();
            out.add(st.getPath().getName() + (st.isDirectory() ? "/" : ":" + st.getLen()));
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 1000})
    void tableRootListsFilesAndSubdirectoriesInKeyOrder(int pageSize) throws Exception {
        assertEquals(List.of("_delta_log/", "p=0/", "p=1/", "root.parquet:3"),
            list(table(pageSize), "t/\u0000"));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 1000})
    void startIsInclusiveForFilesAndDirectories(int pageSize) throws Exception {
        FakeS3 s3 = table(pageSize);
        assertEquals(List.of("00000000000000000001.json:3", "00000000000000000002.json:3",
            "_sidecars/"), list(s3, "t/_delta_log/00000000000000000001.json"));
        assertEquals(List.of("p=1/", "root.parquet:3"), list(s3, "t/p=1"));
        assertEquals(List.of("c.parquet:3", "q=2/"), list(s3, "t/p=1/\u0000"));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 1000})
    void missingDirectoryIsFileNotFound(int pageSize) {
        assertThrows(FileNotFoundException.class, () -> list(table(pageSize), "nothing/\u0000"));
    }
}
