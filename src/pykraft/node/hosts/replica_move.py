"""AlterReplicaLogDirs: moving a replica between this broker's `log.dirs` while it keeps serving (Kafka's
`ReplicaManager.alterReplicaLogDirs` and `ReplicaAlterLogDirsThread`).

- `request(topic, partition, path)`, per partition of the request, as Kafka checks it: a path that is not one of
  `log.dirs` (compared as absolute paths) -> LOG_DIR_NOT_FOUND; a partition this broker has no replica of ->
  the directory is remembered for when the replica is created (`PartitionLogs.preferred_dirs`) and the answer is
  NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_PARTITION when the metadata has no such partition); a replica already
  there -> NONE, and a move of it elsewhere is abandoned; else a `-future` log is created there and a copy task
  started -> NONE (a second request for the same directory changes nothing).
- The copy task reads the current log from the batch holding its log start and appends what it read to the future
  log, batch for batch (offsets, epochs and CRCs as they are), yielding to the event loop between chunks; appends
  to the current log go on meanwhile. When the future log's end reaches the current one's, the swap runs in the
  same event-loop step (so no append falls between the check and the swap): the epoch cache and log start are
  carried over and `PartitionLogs.promote_future` renames the directories. A truncation or reset of the current
  log during the copy (the replica's generation changed), or a log start that passed the copy's end, starts the
  copy again from the current log start.
- After the swap the broker tells the controller the replica's new directory id (AssignReplicasToDirs, KIP-858,
  `on_moved`), which records it in the partition's `directories`.
Unlike Kafka, a restart does not resume an unfinished move: the future log is deleted at start and the replica
stays in its old directory (nothing is lost; the move has to be asked again).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError

from pykraft.node.hosts.partitions import whole_batches_length

if TYPE_CHECKING:
    from pykraft.storage import FileLog

    from pykraft.node.hosts.partitions import PartitionHost, Replica

_log = logging.getLogger("pykraft.node.partitions")
COPY_CHUNK_BYTES = 1 << 20


class ReplicaMover:
    def __init__(self, host: PartitionHost, on_moved: Callable[[Replica, str], None]) -> None:
        self.host = host
        self._on_moved = on_moved
        self._tasks: dict[tuple[str, int], asyncio.Task[None]] = {}
        self.moves_completed = 0

    def directory_for(self, path: str) -> str | None:
        """The configured log directory `path` names (as an absolute path), or None."""
        logs = self.host.logs
        wanted = os.path.abspath(path)
        return next((d for d in (logs.log_dirs if logs else ()) if os.path.abspath(d) == wanted), None)

    def request(self, topic: str, partition: int, path: str) -> ErrorCode:
        logs = self.host.logs
        directory = self.directory_for(path)
        if directory is None or logs is None:
            return ErrorCode.LOG_DIR_NOT_FOUND
        key = (topic, partition)
        replica = self.host.replicas.get(key)
        if replica is None:
            logs.preferred_dirs[key] = directory
            topic_id = self.host.cache.topic_id(topic)
            known = topic_id is not None and self.host.cache.partition(topic_id, partition) is not None
            return ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if logs.dir_of(topic, partition) == directory:
            self.cancel(topic, partition)
            return ErrorCode.NONE
        if logs.future_dir_of(topic, partition) != directory:
            self.cancel(topic, partition)
            logs.create_future(topic, partition, directory)
            self._tasks[key] = asyncio.get_running_loop().create_task(self._copy(key), name=f"move-{topic}-{partition}")
        return ErrorCode.NONE

    def cancel(self, topic: str, partition: int) -> None:
        task = self._tasks.pop((topic, partition), None)
        if task is not None:
            task.cancel()
        if self.host.logs is not None:
            self.host.logs.abandon_future(topic, partition)

    def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()

    async def _copy(self, key: tuple[str, int]) -> None:
        generation = -1
        try:
            while True:
                replica, logs = self.host.replicas.get(key), self.host.logs
                future = logs.future_logs().get(key) if logs is not None else None
                if replica is None or future is None:
                    return  # the replica or the move went away
                current = replica.log
                if generation != replica.generation or future.end_offset() > current.end_offset():
                    generation = replica.generation
                    _restart_copy(current, future)
                if future.end_offset() == current.end_offset():
                    self._swap(replica)
                    return
                if not _copy_chunk(current, future):
                    _restart_copy(current, future)  # retention removed what the copy had not reached yet
                await asyncio.sleep(0)
        except (OSError, InvalidAppendError) as exc:
            _log.error("moving %s-%d failed: %s; the replica stays where it was", key[0], key[1], exc)
            if self.host.logs is not None:
                self.host.logs.abandon_future(*key)
        finally:
            if self._tasks.get(key) is asyncio.current_task():
                del self._tasks[key]

    def _swap(self, replica: Replica) -> None:
        logs = self.host.logs
        assert logs is not None
        old = replica.log
        future = logs.future_logs()[(replica.topic, replica.partition)]
        future.update_high_watermark(old.high_watermark())
        future.increment_log_start(old.start_offset())
        target = logs.future_dir_of(replica.topic, replica.partition)
        source = logs.dir_of(replica.topic, replica.partition)
        cleaning = self.host.cleaning
        if cleaning is not None:
            cleaning.abort(replica.tp_key)  # Kafka's abortAndPauseCleaning around replaceCurrentWithFutureLog
        new = logs.promote_future(replica.topic, replica.partition)
        if cleaning is not None and source is not None and target is not None:
            cleaning.move_checkpoint(replica.tp_key, source, target)  # Kafka's alterCheckpointDir
        new.on_roll = old.on_roll
        new.config = old.config
        replica.log = new
        self.moves_completed += 1
        self.host.changed_partition(replica)
        assert target is not None
        self._on_moved(replica, target)


def _restart_copy(current: FileLog, future: FileLog) -> None:
    """Empty the future log and start it at the batch holding the current log start."""
    first = current.read(current.start_offset(), 1).start_offset
    future.truncate_fully_and_start_at(first)


def _copy_chunk(current: FileLog, future: FileLog) -> bool:
    """Append the next batches of `current` to `future`. False when `current` no longer holds the batch that
    follows `future` (its log start passed it)."""
    if future.end_offset() < current.start_offset():
        return False
    fetched = current.read(future.end_offset(), COPY_CHUNK_BYTES)
    if fetched.start_offset < future.end_offset():
        return False
    # A batch starting above the future log's end is the next one of a compacted log (the log cleaner removed the
    # offsets in between): copied as it is, gap included.
    data = memoryview(fetched.records)
    whole = whole_batches_length(data)
    if whole:
        future.append_as_follower(data[:whole], 0)
    return True
