"""A class data sharing (CDS) archive per Spark class path, so the test bed's short-lived Spark
drivers start on about two thirds of the CPU.

Loading and verifying Spark's, Delta's and Hadoop's classes is most of what a driver JVM spends
before its first job: measured on this machine, a local driver that starts and makes three tiny
Delta appends used 15.6 CPU seconds without an archive and 10.5 with one (JDK 17, line 4.2).
The test suite starts about two hundred such drivers.

:func:`archive_options` returns the JVM options that use the archive of a class path, creating
it first if it is missing (once per machine and class path, in
``$DELTAGUARD_CACHE/cds/<key>.jsa``; ``key`` hashes the class path, ``SPARK_HOME`` and the
``java`` binary). Creating one (:func:`_create`, under a file lock, so concurrent test workers
create it once) runs a training driver with ``-XX:ArchiveClassesAtExit`` into a temporary file.
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
    """Where the archive of a driver with ``spark.driver.extraClassPath=extra_class_path`` lives
    (whether or not it exists yet)."""
    java = os.path.realpath(_java())
    key = hashlib.sha256("\0".join([java, _spark_home(), extra_class_path]).encode()).hexdigest()
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
            [sys.executable, "-m", __name__, str(dump), extra_class_path, scratch],
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
        check = subprocess.run(
            [_java(), "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-cp", class_path]
            + ["-XX:-CreateCoredumpOnCrash", "-version"],
            capture_output=True,
            check=False,
            timeout=120,
            cwd=crash_dir,
        )
    return check.returncode == 0


def _train(dump: str, extra_class_path: str, scratch: str) -> None:
    """The training driver: a local session on this class path that loads what the test bed's
    drivers load (a Delta append, a read, the S3A and plugin classes), then stops; its JVM
    writes the archive to ``dump`` as it exits. Writes the JVM's pid and class path to
    ``scratch/jvm.json``."""
    from deltaguard.localstack.spark_driver import local_driver_conf
    from deltaguard.spark_conf.preset_name import PresetName
    from deltaguard.spark_conf.session import build_spark_session
    from deltaguard.spark_conf.storage import LocalStorage

    conf = {
        **local_driver_conf(Path(scratch)),
        "spark.master": "local[1]",
        "spark.driver.extraClassPath": extra_class_path,
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
    for name in (
        "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "io.deltaguard.logstore.S3ConditionalLogStore",
    ):
        try:
            jvm.java.lang.Class.forName(name)
        except Exception:  # a class path without it: the archive just lacks it
            pass
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    class_path = str(jvm.java.lang.System.getProperty("java.class.path"))
    spark.stop()
    (Path(scratch) / "jvm.json").write_text(json.dumps({"pid": pid, "class_path": class_path}))


if __name__ == "__main__":
    _train(*sys.argv[1:4])
