"""meta.properties and the directory lock."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from pykraft.storage import DirectoryLock, LogDirectoryLockedError, MetaPropertiesError, open_file_log
from pykraft.storage.meta_properties import (
    MetaProperties,
    check_meta_properties,
    read_meta_properties,
    write_meta_properties,
)

DIR_ID = uuid.UUID(bytes=bytes.fromhex("27c6803dc7cb42dd9baacd494ffacc81"))


def test_meta_properties_round_trip_and_format(tmp_path) -> None:
    meta = MetaProperties("MkU3OEVBNTcwNTJENDM2Qk", 1, DIR_ID)
    write_meta_properties(str(tmp_path), meta)
    text = (tmp_path / "meta.properties").read_text()
    assert "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n" in text and "directory.id=J8aAPcfLQt2bqs1JT_rMgQ\n" in text
    assert "node.id=1\n" in text and "version=1\n" in text
    assert read_meta_properties(str(tmp_path)) == meta


def test_reads_kafka_written_properties_with_date_comment(tmp_path) -> None:
    (tmp_path / "meta.properties").write_text(
        "#\n#Tue Oct 01 10:00:00 UTC 2024\nnode.id=3\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\nversion=1\n"
        "cluster.id=abc\\=def\n"
    )
    assert read_meta_properties(str(tmp_path)) == MetaProperties("abc=def", 3, DIR_ID)


@pytest.mark.parametrize(
    "text,match",
    [
        ("version=1\nnode.id=1\n", "cluster.id"),
        ("version=2\nnode.id=1\ncluster.id=x\n", "unsupported version"),
        ("version=1\ncluster.id=x\n", "node.id"),
        ("version=1\ncluster.id=x\nnode.id=1\ndirectory.id=nope\n", "directory.id"),
    ],
)
def test_bad_meta_properties_are_rejected(tmp_path, text: str, match: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(MetaPropertiesError, match=match):
        read_meta_properties(str(tmp_path))


def test_missing_meta_properties_says_to_format(tmp_path) -> None:
    with pytest.raises(MetaPropertiesError, match="storage format"):
        read_meta_properties(str(tmp_path))


def test_check_meta_properties_refuses_another_node() -> None:
    meta = MetaProperties("c", 1, DIR_ID)
    check_meta_properties(meta, cluster_id="c", node_id=1)
    with pytest.raises(MetaPropertiesError):
        check_meta_properties(meta, cluster_id="c", node_id=2)
    with pytest.raises(MetaPropertiesError):
        check_meta_properties(meta, cluster_id="d", node_id=1)


def test_second_open_in_the_same_process_is_refused(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path))
    with pytest.raises(LogDirectoryLockedError, match="in use"):
        open_file_log(str(tmp_path))
    log.close()
    again, _ = open_file_log(str(tmp_path))  # released on close
    again.close()


def test_another_process_cannot_take_the_lock(tmp_path) -> None:
    lock = DirectoryLock(str(tmp_path))
    code = (
        "import sys\nfrom pykraft.storage import DirectoryLock, LogDirectoryLockedError\n"
        "try:\n    DirectoryLock(sys.argv[1])\nexcept LogDirectoryLockedError:\n    sys.exit(3)\nsys.exit(0)\n"
    )
    held = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
    assert held.returncode == 3
    lock.release()
    free = subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
    assert free.returncode == 0


def test_posix_record_lock_is_taken_for_jvm_interop(tmp_path) -> None:
    """A JVM's FileChannel.tryLock is an fcntl lock: probe it from another process with lockf."""
    lock = DirectoryLock(str(tmp_path))
    code = (
        "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n    sys.exit(3)\n"
    )
    probe = subprocess.run([sys.executable, "-c", code, lock.path], check=False)
    assert probe.returncode == 3
    lock.release()
