"""`PartitionLogs`: a broker's partition logs across its `log.dirs` (Kafka's LogManager, storage side only).

Every partition log is a `FileLog` opened by `open_file_log`, the same code as the metadata log (same segments,
indexes, epoch cache and recovery): a log corrupted in the middle refuses to load and the broker does not start.

Per log directory:
- `recovery-point-offset-checkpoint`: the flushed end offset of each partition (written by `checkpoint`);
- `replication-offset-checkpoint`: each partition's high watermark, read back on open (a restarted leader must
  not hide records consumers already read as committed);
- `log-start-offset-checkpoint`: written by retention before it deletes a segment (retention.py), and by
  `checkpoint` for every log whose start lies above its first segment's base (DeleteRecords, log_start.py), as
  Kafka's `checkpointLogStartOffsetsInDir` does.
A partition directory is deleted by renaming it `<topic>-<partition>.<uuid>-delete` (durably) and then removing
it; recovery finishes any such directory it finds. New partitions go to the directory holding the fewest (or the
one AlterReplicaLogDirs named for them, `preferred_dirs`). A move between directories fills a
`<topic>-<partition>.<uuid>-future` log (`create_future`, node/hosts/replica_move.py copies into it) and swaps it in
(`promote_future`); a restart abandons an unfinished move (the future directory is deleted).
"""

from __future__ import annotations

import base64
import logging
import os
import uuid
from collections.abc import Callable, Iterator

from .errors import LogLayoutError
from .file_log import FileLog, LogConfig
from .files import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    LOG_START_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    TOPIC_NAME,
    parse_partition_dir,
    partition_dir_name,
    sync_dir,
)
from .locking import DirectoryLock
from .log_open import RecoveryReport, open_file_log
from .offset_checkpoints import PartitionKey, read_offsets, update_offsets

_log = logging.getLogger("pykraft.storage")


def _rmtree(path: str) -> None:
    import shutil  # here: it brings bz2 and lzma, which a broker that deletes nothing never needs (issue 34)

    shutil.rmtree(path)


def read_topic_id(directory: str) -> uuid.UUID:
    """The topic id in a partition directory's `partition.metadata`. LogLayoutError when missing or unreadable."""
    path = os.path.join(directory, PARTITION_METADATA)
    try:
        with open(path, "rb") as f:
            fields = dict(line.split(":", 1) for line in f.read().decode().splitlines() if ":" in line)
        text = fields["topic_id"].strip()
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (OSError, KeyError, ValueError, UnicodeDecodeError) as exc:
        raise LogLayoutError(f"{path}: no readable topic id ({exc})") from None


def _forget_checkpoints(directory: str, key: PartitionKey) -> None:
    for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT, LOG_START_CHECKPOINT):
        update_offsets(os.path.join(directory, name), {}, removed=[key])


def _future_key(name: str) -> PartitionKey:
    """(topic, partition) of a `<topic>-<partition>.<32 hex>-future` directory name."""
    live = name[: -len(FUTURE_DIR_SUFFIX)].rsplit(".", 1)[0]
    key = parse_partition_dir(live)
    if key is None:
        raise LogLayoutError(f"{name}: not a future log directory name")
    return key


class PartitionLogs:
    """The partition logs of one broker. Single threaded (the event loop), like `FileLog`."""

    def __init__(self, log_dirs: tuple[str, ...], config_for: Callable[[str], LogConfig],
                 held_locks: dict[str, DirectoryLock] | None = None) -> None:
        """`held_locks`: directories already locked by this process (the metadata log's), shared, not released
        here; the other directories are locked now (LogDirectoryLockedError if another process has one)."""
        self.log_dirs = log_dirs
        self.config_for = config_for
        self._locks = dict(held_locks or {})
        self._owned: list[DirectoryLock] = []
        self._logs: dict[PartitionKey, FileLog] = {}
        self._dir_of: dict[PartitionKey, str] = {}
        self.topic_ids: dict[PartitionKey, uuid.UUID] = {}
        self.preferred_dirs: dict[PartitionKey, str] = {}  # AlterReplicaLogDirs before the replica existed
        self._futures: dict[PartitionKey, FileLog] = {}
        self._future_dir_of: dict[PartitionKey, str] = {}
        try:
            for directory in log_dirs:
                if directory not in self._locks:
                    lock = DirectoryLock(directory)
                    self._locks[directory] = lock
                    self._owned.append(lock)
        except BaseException:
            self._release()
            raise

    # ---- opening -----------------------------------------------------------------------------------------------
    def load(self) -> list[tuple[PartitionKey, RecoveryReport]]:
        """Recover every partition directory found (finishing interrupted deletions first). Raises StorageError
        for a log it must not repair; the logs opened so far stay open (close() releases them)."""
        reports = []
        futures: dict[PartitionKey, tuple[str, str]] = {}
        for directory in self.log_dirs:
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if name.endswith(DELETE_DIR_SUFFIX) and os.path.isdir(path):
                    _rmtree(path)
                    sync_dir(directory)
                    continue
                if name.endswith(FUTURE_DIR_SUFFIX) and os.path.isdir(path):
                    futures[_future_key(name)] = (directory, name)
                    continue
                key = parse_partition_dir(name)
                if key is None or key[0] == TOPIC_NAME or not os.path.isdir(path):
                    continue
                if key in self._dir_of:
                    raise LogLayoutError(f"{name} is in two log directories: {self._dir_of[key]} and {directory}")
                reports.append((key, self._open(directory, key, read_topic_id(path))))
        for key, (directory, name) in futures.items():
            path = os.path.join(directory, name)
            if key in self._dir_of:  # a move that did not finish: the replica stays where it was
                _rmtree(path)
                _forget_checkpoints(directory, key)
                sync_dir(directory)
            else:  # the swap stopped between its two renames: the future log is the replica now
                os.rename(path, os.path.join(directory, partition_dir_name(*key)))
                sync_dir(directory)
                reports.append((key, self._open(directory, key, read_topic_id(os.path.join(
                    directory, partition_dir_name(*key))))))
        return reports

    def _open(self, directory: str, key: PartitionKey, topic_id: uuid.UUID) -> RecoveryReport:
        log, report = open_file_log(directory, self.config_for(key[0]), lock=self._locks[directory],
                                    topic=key[0], partition=key[1], topic_id=topic_id)
        hwm = read_offsets(os.path.join(directory, REPLICATION_CHECKPOINT)).get(key)
        if hwm is not None:
            log.update_high_watermark(max(hwm, log.start_offset()))
        self._logs[key] = log
        self._dir_of[key] = directory
        self.topic_ids[key] = topic_id
        return report

    def get(self, topic: str, partition: int) -> FileLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, topic_id: uuid.UUID) -> FileLog:
        """The partition's log, created in the least loaded directory when new. A log left by a deleted topic
        of the same name (another id) is deleted first: the metadata says that topic no longer exists."""
        key = (topic, partition)
        if key in self._logs and self.topic_ids[key] != topic_id:
            self.delete(topic, partition)
        if key not in self._logs:
            counts = {d: 0 for d in self.log_dirs}
            for d in self._dir_of.values():
                counts[d] += 1
            preferred = self.preferred_dirs.pop(key, None)
            self._open(preferred or min(self.log_dirs, key=lambda d: counts[d]), key, topic_id)
        return self._logs[key]

    def __iter__(self) -> Iterator[tuple[PartitionKey, FileLog]]:
        return iter(list(self._logs.items()))

    def future_logs(self) -> dict[PartitionKey, FileLog]:
        """The `-future` logs AlterReplicaLogDirs is filling (replica_move.py), by partition."""
        return dict(self._futures)

    def future_dir_of(self, topic: str, partition: int) -> str | None:
        return self._future_dir_of.get((topic, partition))

    def dir_of(self, topic: str, partition: int) -> str | None:
        """The log directory (one of `log_dirs`) holding the partition's log."""
        return self._dir_of.get((topic, partition))

    # ---- moves between log directories (AlterReplicaLogDirs) ---------------------------------------------------
    def create_future(self, topic: str, partition: int, directory: str) -> FileLog:
        """An empty `<topic>-<partition>.<uuid>-future` log in `directory` for the partition's move there (an
        earlier future log of the partition in another directory is abandoned first)."""
        key = (topic, partition)
        assert key in self._logs and directory in self.log_dirs and directory != self._dir_of[key]
        if key in self._futures:
            if self._future_dir_of[key] == directory:
                return self._futures[key]
            self.abandon_future(topic, partition)
        name = f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
        log, _ = open_file_log(directory, self.config_for(topic), lock=self._locks[directory], topic=topic,
                               partition=partition, topic_id=self.topic_ids[key], name=name)
        self._futures[key] = log
        self._future_dir_of[key] = directory
        return log

    def abandon_future(self, topic: str, partition: int) -> bool:
        """Close and delete the partition's future log, if any (its directory's checkpoint entries go too)."""
        key = (topic, partition)
        log = self._futures.pop(key, None)
        if log is None:
            return False
        directory = self._future_dir_of.pop(key)
        log.close()
        _rmtree(log.directory)
        _forget_checkpoints(directory, key)
        sync_dir(directory)
        return True

    def promote_future(self, topic: str, partition: int) -> FileLog:
        """Kafka's `replaceCurrentWithFutureLog`: the future log (holding exactly what the current one holds)
        becomes the partition's log and the current one is deleted. Order for a crash at any point: both closed
        (flushed), the destination's checkpoints written, the current directory renamed `-delete`, the future one
        renamed live (a restart between the two renames promotes the future log, `load`), then reopened."""
        key = (topic, partition)
        current, future = self._logs.pop(key), self._futures.pop(key)
        source, target = self._dir_of.pop(key), self._future_dir_of.pop(key)
        start, hwm = current.start_offset(), current.high_watermark()
        future.adopt_epochs(current.epoch_entries())
        current.close()
        future.close()
        update_offsets(os.path.join(target, REPLICATION_CHECKPOINT), {key: hwm})
        update_offsets(os.path.join(target, LOG_START_CHECKPOINT), {key: start})
        doomed = os.path.join(source, f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.rename(current.directory, doomed)
        sync_dir(source)
        os.rename(future.directory, os.path.join(target, partition_dir_name(topic, partition)))
        sync_dir(target)
        _rmtree(doomed)
        _forget_checkpoints(source, key)
        self._open(target, key, self.topic_ids[key])
        log = self._logs[key]
        log.update_high_watermark(hwm)
        _log.info("moved the log of %s-%d from %s to %s", topic, partition, source, target)
        return log

    # ---- deletion and checkpoints ------------------------------------------------------------------------------
    def delete(self, topic: str, partition: int) -> bool:
        """Close and remove a partition's log. Returns whether there was one."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        if log is None:
            return False
        self.abandon_future(topic, partition)
        directory = self._dir_of.pop(key)
        self.topic_ids.pop(key, None)
        log.close()
        doomed = os.path.join(directory, f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.rename(log.directory, doomed)
        sync_dir(directory)
        _rmtree(doomed)
        _forget_checkpoints(directory, key)
        _log.debug("deleted the log of %s-%d", topic, partition)  # the partition host logs a summary at INFO
        return True

    def checkpoint(self) -> None:
        """Write each directory's recovery points (flushed end offsets), high watermarks and moved log starts."""
        for directory in self.log_dirs:
            mine = {k: log for k, log in self._logs.items() if self._dir_of[k] == directory}
            update_offsets(os.path.join(directory, RECOVERY_POINT_CHECKPOINT),
                           {k: log.flushed_end_offset() for k, log in mine.items()})
            update_offsets(os.path.join(directory, REPLICATION_CHECKPOINT),
                           {k: log.high_watermark() for k, log in mine.items()})
            update_offsets(os.path.join(directory, LOG_START_CHECKPOINT),
                           {k: log.start_offset() for k, log in mine.items()
                            if log.start_offset() > log.segment_base_offsets()[0]})

    def close(self) -> None:
        try:
            for topic, partition in list(self._futures):
                self.abandon_future(topic, partition)  # a restart does not resume a move: ask again
            for log in self._logs.values():
                log.close()
            if self._logs:
                self.checkpoint()
        finally:
            self._logs.clear()
            self._release()

    def _release(self) -> None:
        for lock in self._owned:
            lock.release()
        self._owned.clear()
