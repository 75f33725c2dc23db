"""File names of a log directory and the fsync discipline shared by every writer.

Layout (Kafka's, reference §3.1); the metadata log and a broker's partition logs share it:

    <log dir>/meta.properties, .lock, log-start-offset-checkpoint, recovery-point-offset-checkpoint,
              replication-offset-checkpoint, cleaner-offset-checkpoint         (one line per partition)
    <log dir>/<topic>-<partition>/                         e.g. __cluster_metadata-0, orders-3
        partition.metadata                                   version and topic id
        00000000000000000000.log / .index / .timeindex      segments, named by 20-digit base offset
        leader-epoch-checkpoint                              epoch -> start offset
        quorum-state (+ quorum-state.backup, ours)           election state
        <20-digit offset>-<10-digit epoch>.checkpoint        snapshots (.part while written, .deleted while removed)

Durability rules: a file's data is durable after fsync of the file; a file's *name* (create, rename, unlink) is
durable after fsync of the directory that holds it. `atomic_write` does both in the right order.
"""

from __future__ import annotations

import os
import re

PARTITION_DIR = "__cluster_metadata-0"
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SNAPSHOT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".checkpoint.part"
DELETED_SUFFIX = ".checkpoint.deleted"
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"  # each compacted partition's first dirty offset (log cleaner)
PARTITION_METADATA = "partition.metadata"
TOPIC_NAME = "__cluster_metadata"
# A partition directory being deleted is first renamed `<topic>-<partition>.<32 hex>-delete` (Kafka's scheme), so
# a crash half-way through leaves a name that recovery finishes deleting, never a half-empty live partition.
DELETE_DIR_SUFFIX = "-delete"
# A replica being moved to another log directory (AlterReplicaLogDirs) is copied into `<topic>-<partition>.<32
# hex>-future` there, then renamed live (Kafka's scheme).
FUTURE_DIR_SUFFIX = "-future"

_SEGMENT_RE = re.compile(r"^(\d{20})\.(log|index|timeindex)$")
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_PARTITION_DIR_RE = re.compile(r"^(.+)-(\d+)$")

# fdatasync flushes the data and the metadata needed to read it back (the file size), which is all an append
# needs; it skips the mtime update that fsync would also write. Platforms without it use fsync.
_datasync = getattr(os, "fdatasync", os.fsync)


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def parse_segment_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) for a segment file name, else None."""
    match = _SEGMENT_RE.match(name)
    return (int(match.group(1)), "." + match.group(2)) if match else None


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) for a live partition directory name, else None (files, `-delete` directories)."""
    if name.endswith(DELETE_DIR_SUFFIX) or name.startswith("."):
        return None
    match = _PARTITION_DIR_RE.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def snapshot_name(offset: int, epoch: int) -> str:
    return f"{offset:020d}-{epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_name(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) for a frozen snapshot file name, else None."""
    match = _SNAPSHOT_RE.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def sync_data(fd: int) -> None:
    """Make a file's content durable (used after appends)."""
    _datasync(fd)


def sync_dir(path: str) -> None:
    """Make the entries of a directory (created, renamed, deleted names) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, *, tmp_suffix: str = ".tmp") -> None:
    """Write `data` to `path` so that a crash leaves either the old or the new content, never a mix.

    Write a temporary file, fsync it, rename it over `path`, fsync the directory. Kafka's checkpoint files and
    quorum-state are written the same way (`<name>.tmp` then an atomic move).
    """
    tmp = path + tmp_suffix
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    sync_dir(os.path.dirname(os.path.abspath(path)))


def pread_exact(fd: int, size: int, position: int) -> bytearray:
    """Read up to `size` bytes at `position` into one buffer (short only at end of file)."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    while done < size:
        got = os.preadv(fd, [view[done:]], position + done)
        if got == 0:
            break
        done += got
    view.release()  # a bytearray cannot shrink while a view of it is alive
    if done < size:
        del buffer[done:]
    return buffer


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
