"""A class data sharing (CDS) archive per Spark class path, so the test bed's short-lived Spark
drivers start on about two thirds of the CPU.

Loading and verifying Spark's, Delta's and Hadoop's classes is most of what a driver JVM spends
before its first job: measured on this machine, a local driver that starts and makes three tiny
Delta appends used 15.6 CPU seconds without an archive and 10.5 with one (JDK 17, line 4.2).
The test suite starts about two hundred such drivers.

:func:`archive_options` returns the JVM options that use the archive of a class path, creating
it first if it is missing (once per machine and class path, in
``$DELTAGUARD_CACHE/cds/<key>.jsa``; ``key`` hashes ``SPARK_HOME``, the ``java`` binary and
every jar on the class path with its modification time and size, which the JVM checks: a
rebuilt plugin jar, as in a fresh checkout, needs a new archive, and the old one is removed).
Creating one (:func:`_create`, under a file lock, so concurrent test workers create it once)
runs a training driver with ``-XX:ArchiveClassesAtExit`` into a temporary file.
The JVM writes that file as it exits, and a JVM that maps a truncated archive crashes (SIGBUS,
measured), so the file is moved into place only after the training JVM has exited and a
separate ``java -Xshare:on`` has opened it on the same class path (:func:`usable`). Anything else (a failed
training run, a JVM that cannot use the file) leaves no archive, and drivers start without one,
as before.

A driver given an archive it cannot use (another JDK build, another class path) starts without
it: ``-Xshare:auto`` is the JVM's default, and ``-Xlog:cds*=off`` keeps its warning off the
driver's standard output. These are test-bed settings only, like the rest of
:mod:`deltaguard.localstack.spark_driver`; nothing here is part of the product.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deltaguard.spark_conf.jvm_deps import cache_dir

#: How long the training JVM may take to write its archive after its Python process exits.
_EXIT_WAIT_S = 120.0


def _java() -> str:
    """The ``java`` pyspark launches: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return str(Path(home) / "bin" / "java")
    return shutil.which("java") or "java"


def _spark_home() -> str:
    import pyspark

    return os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)


def archive_path(extra_class_path: str) -> Path:
    """Where the archive of a driver whose jars make ``extra_class_path``
    (:func:`deltaguard.spark_conf.session.class_path`) lives, whether or not it exists yet."""
    java = os.path.realpath(_java())
    spark_jars = sorted(str(p) for p in (Path(_spark_home()) / "jars").glob("*.jar"))
    # The JVM refuses an archive if any jar on its class path changed (modification time,
    # size), and a fresh checkout rebuilds the plugin jar: such a change makes a new key.
    parts = [_spark_home()]
    for entry in [java, *extra_class_path.split(os.pathsep), *spark_jars]:
        with contextlib.suppress(OSError):
            stat = os.stat(entry)
            parts.append(f"{entry} {stat.st_mtime_ns} {stat.st_size}")
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return cache_dir() / "cds" / f"{key[:16]}.jsa"


def archive_options(extra_class_path: str) -> str:
    """The JVM options for a driver with this extra class path: the archive (created now if it
    is missing; empty options if it cannot be created) and its warnings off standard output."""
    archive = archive_path(extra_class_path)
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        with open(archive.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not archive.exists():
                _create(archive, extra_class_path)
    if not archive.exists():
        return ""
    return f"-XX:SharedArchiveFile={archive} -Xlog:cds*=off"


def _create(archive: Path, extra_class_path: str) -> None:
    """Runs the training driver (this module's ``__main__``) and moves its archive into place
    once its JVM has exited and the archive opens (see the module docstring). Never raises:
    a failure leaves no archive."""
    with tempfile.TemporaryDirectory(dir=archive.parent) as scratch:
        dump = Path(scratch) / "dump.jsa"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "deltaguard.localstack.class_archive",
                "train",
                str(dump),
                extra_class_path,
                scratch,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        written = Path(scratch) / "jvm.json"
        if run.returncode != 0 or not written.exists():
            return
        jvm = json.loads(written.read_text())
        deadline = time.monotonic() + _EXIT_WAIT_S
        while Path(f"/proc/{jvm['pid']}").exists():
            if time.monotonic() > deadline:
                return
            time.sleep(0.2)
        if usable(dump, jvm["class_path"]):
            class_path_file(archive).write_text(jvm["class_path"])
            os.replace(dump, archive)
            _remove_superseded(archive, jvm["class_path"])


def _remove_superseded(archive: Path, class_path: str) -> None:
    """Removes the archives of the same class path made before a jar on it changed (a JVM
    that has one mapped keeps it: the file is gone from the directory only)."""
    for other in archive.parent.glob("*.classpath"):
        if other != class_path_file(archive) and other.read_text() == class_path:
            for stale in (other.with_suffix(".jsa"), other, other.with_suffix(".lock")):
                stale.unlink(missing_ok=True)


def class_path_file(archive: Path) -> Path:
    """Where the class path the archive was written on is kept (next to it: written before
    the archive is moved into place)."""
    return archive.with_suffix(".classpath")


def usable(archive: Path, class_path: str) -> bool:
    """Whether a JVM on ``class_path`` opens ``archive`` (``-Xshare:on``: a JVM that cannot use
    it fails instead of going on without it), in a separate ``java`` process, so that a
    truncated file crashes that process only."""
    if not archive.is_file():
        return False
    with tempfile.TemporaryDirectory() as crash_dir:  # where a crash leaves its hs_err file
        java = [_java(), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", class_path]
        check = subprocess.run(
            [*java, "-XX:-CreateCoredumpOnCrash", "-version"],
            capture_output=True,
            check=False,
            timeout=120,
            cwd=crash_dir,
        )
    return check.returncode == 0


def _train(dump: str, extra_class_path: str, scratch: str) -> None:
    """The training driver: a local session of this interpreter's line (whose jars must make
    ``extra_class_path``, or it exits without an archive) that loads what the test bed's
    drivers load (a Delta append, a read, the S3A and plugin classes), then stops; its JVM
    writes the archive to ``dump`` as it exits. Writes the JVM's pid and class path to
    ``scratch/jvm.json``."""
    from deltaguard.localstack.spark_driver import local_driver_conf
    from deltaguard.logstore.preset_name import PresetName
    from deltaguard.spark_conf.session import (
        LOGSTORE_CLASSES,
        build_spark_session,
        class_path,
        default_jars,
    )
    from deltaguard.spark_conf.storage import LocalStorage

    if class_path(default_jars()) != extra_class_path:
        sys.exit("class_archive train: the class path is not this line's (no archive)")

    conf = {
        **local_driver_conf(Path(scratch)),
        "spark.master": "local[1]",
        "spark.driver.extraJavaOptions": (
            f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ArchiveClassesAtExit={dump}"
        ),
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "ERROR",
    }
    spark = build_spark_session(LocalStorage(), PresetName.LOCAL, extra_conf=conf)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    table = f"{scratch}/table"
    for _ in range(2):
        spark.range(10).write.format("delta").mode("append").save(table)
    spark.read.format("delta").load(table).count()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", hadoop)  # S3A's classes
    jvm.java.lang.Class.forName(LOGSTORE_CLASSES[PresetName.S3_CONDITIONAL])  # the plugin's
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    jvm_class_path = str(jvm.java.lang.System.getProperty("java.class.path"))
    spark.stop()
    (Path(scratch) / "jvm.json").write_text(json.dumps({"pid": pid, "class_path": jvm_class_path}))


def main(argv: list[str]) -> int:
    """``ensure``: makes sure this interpreter's Spark line has its archive (``make
    spark-lines`` runs it in every line's venv) and prints its path; ``train DUMP CLASS_PATH
    SCRATCH``: the training driver of :func:`_create`."""
    if argv[:1] == ["ensure"]:
        from deltaguard.spark_conf.session import class_path, default_jars

        jars = class_path(default_jars())
        options = archive_options(jars)
        print(archive_path(jars) if options else "no archive (see docs/reference/testbed.md)")
        return 0 if options else 1
    if argv[:1] == ["train"] and len(argv) == 4:
        _train(*argv[1:])
        return 0
    print("usage: class_archive ensure | train DUMP CLASS_PATH SCRATCH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
