"""Shared helpers of the storage tests: batches, log factories, file damage."""

from __future__ import annotations

import os
from collections.abc import Callable

from pykraft.raft.log import ReplicatedLog
from pykraft.raft.memory_log import MemoryLog
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import FileLog, LogConfig, open_file_log
from pykraft.storage.files import PARTITION_DIR

# Small segments and a small index interval so that a few batches already roll segments and index entries.
SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


def batch(base: int, epoch: int, count: int = 1, timestamp_ms: int = 0, size: int = 0) -> bytes:
    payload = b"x" * size
    records = [SimpleRecord(value=f"v{base + i:06d}".encode() + payload) for i in range(count)]
    return encode_batch(records, base_offset=base, partition_leader_epoch=epoch, timestamp_ms=timestamp_ms)


def fill(log: ReplicatedLog, *spec: tuple[int, int]) -> ReplicatedLog:
    """Append batches given as (epoch, record count)."""
    for epoch, count in spec:
        log.append_as_follower(batch(log.end_offset(), epoch, count), epoch)
    return log


def partition_dir(root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(root), PARTITION_DIR)


def open_log(root: str | os.PathLike[str], config: LogConfig = SMALL) -> FileLog:
    log, _ = open_file_log(os.fspath(root), config)
    return log


def log_factories(tmp_path: os.PathLike[str]) -> dict[str, Callable[[], ReplicatedLog]]:
    counter = iter(range(1_000_000))
    return {
        "memory": MemoryLog,
        "file": lambda: open_log(os.path.join(os.fspath(tmp_path), f"d{next(counter)}")),
    }


def segment_files(root: str | os.PathLike[str], suffix: str = ".log") -> list[str]:
    d = partition_dir(root)
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(suffix) and n[:20].isdigit())
