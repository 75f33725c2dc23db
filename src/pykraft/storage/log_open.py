"""Opening a `FileLog` (the metadata log or a partition log): lock, find the files, recover, rebuild what can be
rebuilt, refuse what cannot.

Every check that may refuse runs before anything is written, so a refused open changes nothing on disk:
0. `partition.metadata` names this topic id (a directory of a deleted and re-created topic is refused);
1. find the snapshots and the leftovers of interrupted snapshot writes and deletes (`.checkpoint.part`,
   `.checkpoint.deleted`); validate every frozen snapshot (they are never torn, so a bad one is corruption);
   and the leftovers of an interrupted cleaner swap (segment_swap.py: `.cleaned`, `.swap`, `.deleted` files),
   planned as Kafka's LogLoader carries them out, the segments read as they will be once it is done;
2. validate every batch of every segment, oldest first (`recovery.scan_segment`): a torn tail of the last segment
   is found and reported; anything else bad raises `CorruptLogError`;
3. check the log start offset against the log end and the snapshots.
Then the repairs:
4. remove the leftovers and the orphaned index files, finish the cleaner's swap; cut the torn tail;
5. compare each `.index`/`.timeindex` with the entries recomputed from the batches; rewrite any that differ;
6. rebuild the epoch cache from the batches plus `leader-epoch-checkpoint`;
7. fsync what recovery touched, so that everything the log now holds is durable (flushed end = end offset).

The clean point is the log start: every batch is checked on every open (cost: see benchmarks/storage.py).
"""

from __future__ import annotations

import base64
import logging
import os
import uuid
from dataclasses import dataclass

from .epoch_cache import decode_epoch_checkpoint, merge_epochs
from .errors import LogLayoutError
from .file_log import FileLog, LogConfig
from .files import (
    EPOCH_CHECKPOINT,
    LOG_START_CHECKPOINT,
    LOG_SUFFIX,
    PARTITION_METADATA,
    TOPIC_NAME,
    parse_segment_name,
    partition_dir_name,
    sync_data,
    sync_dir,
)
from .locking import DirectoryLock
from .log_start import truncate_epochs_from_start
from .offset_checkpoints import read_offsets
from .recovery import TornTail, cut_torn_tail, scan_segment
from .retention import reset_to_snapshot
from .segment import Segment
from .segment_swap import SwapRecovery, apply_swap_recovery, plan_swap_recovery

_log = logging.getLogger("pykraft.storage")

# Kafka's fixed topic id of __cluster_metadata (Uuid.METADATA_TOPIC_ID = 0x...01).
METADATA_TOPIC_ID = uuid.UUID(int=1)


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What opening the log found and did."""

    segments: int
    bytes_validated: int
    torn_tail: TornTail | None
    rebuilt_indexes: tuple[str, ...]
    removed_files: tuple[str, ...]


def open_file_log(
    log_dir: str, config: LogConfig | None = None, *, lock: DirectoryLock | None = None,
    topic: str = TOPIC_NAME, partition: int = 0, topic_id: uuid.UUID = METADATA_TOPIC_ID, name: str | None = None,
) -> tuple[FileLog, RecoveryReport]:
    """Open (creating if needed) `<log_dir>/<topic>-<partition>` (by default `__cluster_metadata-0`). Takes the
    directory lock unless one is given; the log then releases it on close. Raises a `StorageError` subclass for
    anything it must not repair, including a directory that belongs to another topic id (a deleted and re-created
    topic whose old files were left behind)."""
    config = config or LogConfig()
    owned = lock is None
    lock = lock or DirectoryLock(log_dir)
    try:
        return _open(log_dir, config, lock if owned else None, (topic, partition), topic_id, name)
    except BaseException:
        if owned:
            lock.release()
        raise


@dataclass(slots=True)
class _Findings:
    """What the read-only checks of an open found, for the repairs that follow them."""

    log: FileLog
    metadata_missing: bool  # no partition.metadata yet (written with the repairs)
    leftovers: list[str]  # interrupted snapshot writes and deletes
    swap: SwapRecovery  # leftovers of an interrupted cleaner swap (segment_swap.py)
    orphans: list[str]  # index files without their segment
    torn: TornTail | None
    scanned_epochs: list[tuple[int, int]]
    validated: int
    end: int


def encode_partition_metadata(topic_id: uuid.UUID) -> bytes:
    """Kafka's `partition.metadata`: the topic id in base64url without padding, as Kafka prints Uuids."""
    text = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
    return f"version: 0\ntopic_id: {text}\n".encode()


def _partition_metadata_missing(directory: str, topic_id: uuid.UUID) -> bool:
    """Reads only: True when the file is absent; refuses a directory that belongs to another topic id."""
    path = os.path.join(directory, PARTITION_METADATA)
    want = encode_partition_metadata(topic_id)
    try:
        with open(path, "rb") as f:
            have = f.read()
    except FileNotFoundError:
        return True
    if have.split() != want.split():
        raise LogLayoutError(f"{path}: the directory belongs to another topic id ({have!r}, expected {want!r}); "
                             f"move it aside if the topic was deleted and re-created")
    return False


def _write_partition_metadata(directory: str, topic_id: uuid.UUID) -> None:
    with open(os.path.join(directory, PARTITION_METADATA), "wb") as f:
        f.write(encode_partition_metadata(topic_id))
        os.fsync(f.fileno())
    sync_dir(directory)


def _open(log_dir: str, config: LogConfig, owned_lock: DirectoryLock | None, key: tuple[str, int],
          topic_id: uuid.UUID, name: str | None = None) -> tuple[FileLog, RecoveryReport]:
    directory = os.path.join(log_dir, name or partition_dir_name(*key))
    if not os.path.isdir(directory):  # a fresh directory: nothing in it can be refused
        os.makedirs(directory)
        _write_partition_metadata(directory, topic_id)
        sync_dir(log_dir)
    found = _check(log_dir, FileLog(directory, config, owned_lock, key), config, key, topic_id)
    # Every check passed: from here on the repairs.
    log, end, torn = found.log, found.end, found.torn
    if found.metadata_missing:
        _write_partition_metadata(directory, topic_id)
    log._snapshots.remove_leftovers(found.leftovers)
    if found.swap:
        _log.info("%s: finishing an interrupted cleaner swap: deleting %s, renaming %s", directory,
                  found.swap.delete, found.swap.renames)
        apply_swap_recovery(directory, found.swap)
        for segment in log._segments:
            if segment.base_offset in found.swap.swap_logs:
                segment.path = os.path.join(directory, found.swap.swap_logs[segment.base_offset][: -len(".swap")])
    for name in found.orphans:
        os.unlink(os.path.join(directory, name))
    removed = found.leftovers + found.swap.delete + [name for name, _ in found.swap.renames] + found.orphans
    if torn is not None:
        cut_torn_tail(log._segments[-1], torn)
    rebuilt = tuple(s.index.index_path for s in log._segments if s.index.open_files())
    for path in rebuilt:
        _log.info("rebuilt the indexes of %s from its batches", path)
    log._epochs = merge_epochs(found.scanned_epochs, _read_epochs(directory), end)
    earliest = log.earliest_snapshot_id()
    if log._start_offset > 0 and earliest is not None:
        log._epochs = [(e, max(s, log._start_offset)) for e, s in log._epochs if e >= earliest.epoch]
    elif log._start_offset > log._bases[0]:  # a partition log whose start DeleteRecords moved into a segment
        log._epochs = truncate_epochs_from_start(log._epochs, log._start_offset)
    log._high_watermark = log._flushed = min(log._start_offset, end)
    latest = log.latest_snapshot_id()
    if log._start_offset > end:
        assert latest is not None  # _check refused a start past the end that no snapshot covers
        reset_to_snapshot(log, latest)
    else:
        log.truncate_to_latest_snapshot()
    _make_durable(log, torn is not None or bool(rebuilt) or bool(removed))
    report = RecoveryReport(len(log._segments), found.validated, torn, rebuilt, tuple(removed))
    return log, report


def _check(log_dir: str, log: FileLog, config: LogConfig, key: tuple[str, int], topic_id: uuid.UUID) -> _Findings:
    """Every check that may refuse the directory, reading only (a refusal changes nothing on disk). Closes the
    files it opened when it refuses."""
    directory = log.directory
    try:
        metadata_missing = _partition_metadata_missing(directory, topic_id)
        leftovers = log._snapshots.load()
        for snapshot_id in log.snapshot_ids():
            reader = log.read_snapshot(snapshot_id)
            assert reader is not None
            reader.validate()
        swap = plan_swap_recovery(directory)
        bases, orphans = _segment_files(directory, swap)
        start = read_offsets(os.path.join(log_dir, LOG_START_CHECKPOINT)).get(key)
        latest = log.latest_snapshot_id()
        if not bases:
            bases = [max(start or 0, latest.offset if latest else 0)]
        torn, scanned, validated = _scan_all(log, bases, config, swap)
        end = log.end_offset()
        log._start_offset = max(start or 0, bases[0])
        if log._start_offset > end and (latest is None or latest.offset < log._start_offset):
            raise LogLayoutError(f"{log_dir}: log start offset {log._start_offset} is past the log end {end} "
                                 f"and no snapshot covers it")
    except BaseException:
        for segment in log._segments:
            segment.close()
        raise
    return _Findings(log, metadata_missing, leftovers, swap, orphans, torn, scanned, validated, end)


def _segment_files(directory: str, swap: SwapRecovery) -> tuple[list[int], list[str]]:
    """Base offsets of the `.log` files (as they will be once `swap` is carried out), and index files that have no
    `.log` (removed)."""
    logs: set[int] = set(swap.swap_logs)
    indexes: dict[int, list[str]] = {}
    doomed = set(swap.delete)
    for name in os.listdir(directory):
        parsed = parse_segment_name(name) if name not in doomed else None
        if parsed is None:
            continue
        base, suffix = parsed
        if suffix == LOG_SUFFIX:
            logs.add(base)
        else:
            indexes.setdefault(base, []).append(name)
    orphans = [name for base, names in indexes.items() if base not in logs for name in names]
    return sorted(logs), sorted(orphans)


def _scan_all(log: FileLog, bases: list[int], config: LogConfig,
              swap: SwapRecovery) -> tuple[TornTail | None, list[tuple[int, int]], int]:
    expected = bases[0]
    last_epoch = 0
    torn = None
    epochs: list[tuple[int, int]] = []
    validated = 0
    for i, base in enumerate(bases):
        swapped = swap.swap_logs.get(base)
        path = None if swapped is None else os.path.join(log.directory, swapped)
        segment = Segment(log.directory, base, config.index_interval_bytes, path)
        log._segments.append(segment)
        log._bases.append(base)
        gaps = config.allow_offset_gaps  # a cleaned log: a segment may start above the previous one's end
        if base != expected and not (gaps and base > expected):
            raise LogLayoutError(
                f"{segment.path}: segment starts at offset {base} but the previous segment ends at {expected}; "
                f"a segment file is missing or misnamed"
            )
        scan = scan_segment(segment, base, last_epoch, is_last=i == len(bases) - 1, gaps=gaps)
        segment.next_offset = scan.next_offset
        if i < len(bases) - 1:
            segment.index.seal_entry()  # a sealed segment's time index ends with the entry its seal wrote
        validated += segment.size
        for epoch, start in scan.epoch_starts:
            if not epochs or epoch > epochs[-1][0]:
                epochs.append((epoch, start))
        expected, last_epoch = scan.next_offset, scan.last_epoch
        if scan.torn is not None:
            torn = scan.torn
            _log.warning(
                "truncated a torn write at the tail of the log: %s from byte %d (offset %d), "
                "%d bytes dropped: %s", torn.path, torn.position, torn.offset, torn.dropped_bytes, torn.reason,
            )
    log._last_batch_epoch = last_epoch
    return torn, epochs, validated


def _read_epochs(directory: str) -> list[tuple[int, int]]:
    try:
        with open(os.path.join(directory, EPOCH_CHECKPOINT), "rb") as f:
            return decode_epoch_checkpoint(f.read()) or []
    except FileNotFoundError:
        return []


def _make_durable(log: FileLog, changed_names: bool) -> None:
    """After a crash the page cache may hold data the disk does not: sync the active segment (sealed ones were
    synced when sealed) and the directory before calling anything flushed."""
    sync_data(log._segments[-1].fd)
    if changed_names:
        sync_dir(log.directory)
    log._segments[-1].dirty = False
    log._flushed = log.end_offset()
    log._dirty_epochs = True
