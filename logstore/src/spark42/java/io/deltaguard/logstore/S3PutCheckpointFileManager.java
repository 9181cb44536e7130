package io.deltaguard.logstore;

import java.io.IOException;
import java.io.OutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;

/**
 * Spark's {@code CheckpointFileManager} for Spark 4.2 (package {@code
 * ...streaming.checkpointing}) that writes each file on S3 with one PUT instead of a temp file
 * plus rename. Spark 3.5 and 4.0 keep the interface in another package: their twin is
 * {@code S3PutCheckpointFileManagerSpark35}, the same code. Select it with {@code
 * spark.sql.streaming.checkpointFileManagerClass} (the {@code s3-conditional} preset does).
 *
 * <p>Who uses it: Delta writes each version's {@code N.crc} checksum through it, and Structured
 * Streaming writes its checkpoint (offsets, commits, metadata, sources, state-store files)
 * through it. {@link #createAtomic} on an S3A path returns a {@link CheckpointPut}: the contract,
 * and why one PUT is as atomic as the rename it replaces, is that class's javadoc. Every other
 * path (local disk, HDFS) and every other operation (open, list, mkdirs, delete) is Spark's
 * own default manager unchanged; {@link #exists} on an S3A path is one request where S3A sends
 * two ({@link CheckpointExists}).
 */
public class S3PutCheckpointFileManager implements CheckpointFileManager {
    /** The Spark SQL / Hadoop setting that selects the manager (Spark reads it from Hadoop). */
    public static final String MANAGER_CLASS_KEY = CheckpointPut.MANAGER_CLASS_KEY;

    private final CheckpointFileManager spark;
    private final Configuration conf;

    public S3PutCheckpointFileManager(Path path, Configuration hadoopConf) {
        Configuration sparkDefault = new Configuration(hadoopConf);
        sparkDefault.unset(MANAGER_CLASS_KEY);
        this.spark = CheckpointFileManager.create(path, sparkDefault);
        this.conf = hadoopConf;
    }

    @Override
    public CheckpointFileManager.CancellableFSDataOutputStream createAtomic(
            Path path, boolean overwriteIfPossible) {
        CheckpointPut put;
        try {
            put = CheckpointPut.forPath(path, conf, overwriteIfPossible,
                new CheckpointPut.Fallback() {
                    @Override
                    public OutputStream open() {
                        return spark.createAtomic(path, overwriteIfPossible);
                    }

                    @Override
                    public void cancel(OutputStream opened) {
                        ((CheckpointFileManager.CancellableFSDataOutputStream) opened).cancel();
                    }
                });
        } catch (IOException e) {
            throw CheckpointPut.<RuntimeException>sneaky(e);
        }
        if (put == null) {
            return spark.createAtomic(path, overwriteIfPossible);
        }
        return new CheckpointFileManager.CancellableFSDataOutputStream(put) {
            @Override
            public void cancel() {
                put.cancel();
            }
        };
    }

    @Override
    public FSDataInputStream open(Path path) {
        return spark.open(path);
    }

    @Override
    public FileStatus[] list(Path path, PathFilter filter) {
        return spark.list(path, filter);
    }

    @Override
    public void mkdirs(Path path) {
        spark.mkdirs(path);
    }

    /** On an S3A path one LIST instead of S3A's HEAD plus LIST ({@link CheckpointExists}). */
    @Override
    public boolean exists(Path path) {
        Boolean found;
        try {
            found = CheckpointExists.exists(path, conf);
        } catch (IOException e) {
            throw CheckpointPut.<RuntimeException>sneaky(e);
        }
        return found != null ? found : spark.exists(path);
    }

    @Override
    public void delete(Path path) {
        spark.delete(path);
    }

    @Override
    public boolean isLocal() {
        return spark.isLocal();
    }

    @Override
    public Path createCheckpointDirectory() {
        return spark.createCheckpointDirectory();
    }

    @Override
    public void close() {
        spark.close();
    }
}
