"""Helpers of the log cleaner tests: a keyed partition log, what a reader sees, one pass on this thread."""

from __future__ import annotations

import os
import time
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.storage import FileLog, open_file_log
from pykraft.storage.cleaner import Cleaner
from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings, clean_once
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.file_log import LogConfig
from pykraft.storage.log_manager import read_topic_id
from pykraft.storage.offset_map import OffsetMap, Throttler

KEY = ("compacted", 0)
CONFIG = LogConfig(segment_bytes=1200, index_interval_bytes=100, allow_offset_gaps=True)


def new_log(root: str, config: LogConfig = CONFIG) -> FileLog:
    log, _ = open_file_log(root, config, topic=KEY[0], partition=KEY[1], topic_id=uuid.uuid4())
    return log


def reopen(root: str, config: LogConfig = CONFIG) -> tuple[FileLog, object]:
    topic_id = read_topic_id(os.path.join(root, f"{KEY[0]}-{KEY[1]}"))
    return open_file_log(root, config, topic=KEY[0], partition=KEY[1], topic_id=topic_id)


def put(log: FileLog, key: str | None, value: str | None, timestamp_ms: int = 1000, epoch: int = 1) -> int:
    """Append one keyed record as its own batch; returns its offset."""
    offset = log.end_offset()
    record = SimpleRecord(None if value is None else value.encode(), None if key is None else key.encode(),
                          timestamp_ms=timestamp_ms)
    log.append_as_follower(encode_batch([record], base_offset=offset, partition_leader_epoch=epoch,
                                        timestamp_ms=timestamp_ms), epoch)
    return offset


def put_idempotent(log: FileLog, producer_id: int, sequence: int, pairs: list[tuple[str, str]],
                   timestamp_ms: int = 1000) -> int:
    builder = DefaultRecordBatchBuilder(2, 0, 0, producer_id, 0, sequence, 1 << 20)
    for i, (key, value) in enumerate(pairs):
        builder.append(i, timestamp_ms, key.encode(), value.encode(), [])
    raw = bytearray(builder.build())
    offset = log.end_offset()
    raw[0:8] = offset.to_bytes(8, "big")
    raw[12:16] = (1).to_bytes(4, "big")
    log.append_as_follower(bytes(raw), 1)
    return offset


def records(log: FileLog, start: int | None = None) -> list[tuple[int, str | None, str | None]]:
    """Every record a reader from `start` (the log start) sees: (offset, key, value)."""
    found = []
    offset = log.start_offset() if start is None else start
    while offset < log.end_offset():
        data = log.read(offset, 1 << 20).records
        if not len(data):
            break
        for batch in iter_batches(data):
            for r in batch.records():
                if r.offset >= offset:
                    found.append((r.offset, None if r.key is None else bytes(r.key).decode(),
                                  None if r.value is None else bytes(r.value).decode()))
            offset = max(offset, batch.next_offset)
    return found


def batches(log: FileLog) -> list:
    found = []
    offset = log.start_offset()
    while offset < log.end_offset():
        data = log.read(offset, 1 << 20).records
        if not len(data):
            break
        for batch in iter_batches(data):
            found.append(batch)
            offset = max(offset, batch.next_offset)
    return found


def latest_per_key(rows: list[tuple[int, str | None, str | None]]) -> dict[str, tuple[int, str | None]]:
    latest: dict[str, tuple[int, str | None]] = {}
    for offset, key, value in rows:
        if key is not None:
            latest[key] = (offset, value)
    return latest


def run_pass(manager: CleanerManager, log: FileLog, now_ms: int, *, settings: CompactionSettings | None = None,
             buffer: int = 1 << 20, producers: dict[int, ProducerLast] | None = None, root: str | None = None):
    """One pass on this thread over `log` (None when it is not due)."""
    cleaner = Cleaner(OffsetMap(buffer), 64 * 1024, Throttler(float("inf"), time.monotonic_ns()))
    log_dir = root or os.path.dirname(log.directory)
    offered = CleanableLog(KEY, log_dir, log, settings or CompactionSettings(segment_bytes=CONFIG.segment_bytes),
                           producers or {})
    return clean_once(manager, cleaner, [offered], now_ms)
