"""`PartitionLogs`: a broker's partition logs across its `log.dirs` (Kafka's LogManager, storage side only).

Every partition log is a `FileLog` opened by `open_file_log`, the same code as the metadata log (same segments,
indexes, epoch cache and recovery): a log corrupted in the middle refuses to load and the broker does not start.

Per log directory:
- `recovery-point-offset-checkpoint`: the flushed end offset of each partition (written by `checkpoint`);
- `replication-offset-checkpoint`: each partition's high watermark, read back on open (a restarted leader must
  not hide records consumers already read as committed);
- `log-start-offset-checkpoint`: written by retention before it deletes a segment (retention.py).
A partition directory is deleted by renaming it `<topic>-<partition>.<uuid>-delete` (durably) and then removing
it; recovery finishes any such directory it finds. New partitions go to the directory holding the fewest.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator

from .errors import LogLayoutError
from .file_log import FileLog, LogConfig
from .files import (
    DELETE_DIR_SUFFIX,
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
        for directory in self.log_dirs:
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if name.endswith(DELETE_DIR_SUFFIX) and os.path.isdir(path):
                    shutil.rmtree(path)
                    sync_dir(directory)
                    continue
                key = parse_partition_dir(name)
                if key is None or key[0] == TOPIC_NAME or not os.path.isdir(path):
                    continue
                if key in self._dir_of:
                    raise LogLayoutError(f"{name} is in two log directories: {self._dir_of[key]} and {directory}")
                reports.append((key, self._open(directory, key, read_topic_id(path))))
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

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        """The log directory holding the partition (its checkpoint files live there)."""
        return self._dir_of.get((topic, partition))

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
            self._open(min(self.log_dirs, key=lambda d: counts[d]), key, topic_id)
        return self._logs[key]

    def __iter__(self) -> Iterator[tuple[PartitionKey, FileLog]]:
        return iter(list(self._logs.items()))

    # ---- deletion and checkpoints ------------------------------------------------------------------------------
    def delete(self, topic: str, partition: int) -> bool:
        """Close and remove a partition's log. Returns whether there was one."""
        key = (topic, partition)
        log = self._logs.pop(key, None)
        if log is None:
            return False
        directory = self._dir_of.pop(key)
        self.topic_ids.pop(key, None)
        log.close()
        doomed = os.path.join(directory, f"{partition_dir_name(topic, partition)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        os.rename(log.directory, doomed)
        sync_dir(directory)
        shutil.rmtree(doomed)
        for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT):
            update_offsets(os.path.join(directory, name), {}, removed=[key])
        _log.info("deleted the log of %s-%d", topic, partition)
        return True

    def checkpoint(self) -> None:
        """Write each directory's recovery points (flushed end offsets) and high watermarks."""
        for directory in self.log_dirs:
            mine = {k: log for k, log in self._logs.items() if self._dir_of[k] == directory}
            update_offsets(os.path.join(directory, RECOVERY_POINT_CHECKPOINT),
                           {k: log.flushed_end_offset() for k, log in mine.items()})
            update_offsets(os.path.join(directory, REPLICATION_CHECKPOINT),
                           {k: log.high_watermark() for k, log in mine.items()})

    def close(self) -> None:
        try:
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
