"""DescribeLogDirs (v1-v4, Kafka 4.x's range; v0 was removed in 4.0): the broker's `log.dirs` and the partition
logs in each, as Kafka's `ReplicaManager.describeLogDirs` answers; and AlterReplicaLogDirs (v1-v2), answered per
partition by the replica mover (node/hosts/replica_move.py).

- Every directory of `log.dirs` is listed by its absolute path, whatever the request names; a directory that
  cannot be read (statvfs fails) answers KAFKA_STORAGE_ERROR. TotalBytes / UsableBytes (v4) are the volume's
  (statvfs: total, and available to this process).
- Topics null: every partition log; a list: only the named partitions (an empty list: none, the directories
  still listed). Topics with no partition left are not listed.
- Per partition: the size of its segment files, the offset lag (Kafka's: for the current log max(HWM - LEO, 0),
  so 0 in practice; for a future log, the current log's end minus the future log's end) and IsFutureKey.
The metadata log (`__cluster_metadata-0`) is not a partition log and is never listed, as in Kafka.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Protocol

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.storage import FileLog

from pykraft.node.hosts.partitions import PartitionHost
from pykraft.node.apis.wire_build import make, response_namespace

INVALID_OFFSET_LAG = -1


class MoveRequests(Protocol):
    """What AlterReplicaLogDirs asks of the mover (a ReplicaMover, or the data plane's stand-in before it opens)."""

    def request(self, topic: str, partition: int, path: str) -> ErrorCode: ...


def volume_bytes(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding `path`. OSError when it cannot be read."""
    stat = os.statvfs(path)
    return stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize


def wanted_partitions(message: Any) -> set[tuple[str, int]] | None:
    """None: every partition (Topics null); else the named (topic, partition) pairs."""
    if message.topics is None:
        return None
    return {(str(t.topic), int(p)) for t in message.topics for p in t.partitions}


def logs_in(host: PartitionHost, directory: str) -> Iterator[tuple[str, int, FileLog, bool]]:
    """(topic, partition, log, is_future) of every partition log in `directory`: the current logs, then the
    future logs an AlterReplicaLogDirs is filling there."""
    logs = host.logs
    if logs is None:
        return
    for (topic, index), log in logs:
        if logs.dir_of(topic, index) == directory:
            yield topic, index, log, False
    for (topic, index), log in logs.future_logs().items():
        if logs.future_dir_of(topic, index) == directory:
            yield topic, index, log, True


def offset_lag(host: PartitionHost, topic: str, index: int, log: FileLog, is_future: bool) -> int:
    current = host.logs.get(topic, index) if host.logs is not None else None
    if current is None:
        return INVALID_OFFSET_LAG
    if is_future:
        return current.end_offset() - log.end_offset()
    return max(current.high_watermark() - log.end_offset(), 0)


def describe_log_dirs(host: PartitionHost, log_dirs: tuple[str, ...], message: Any) -> Any:
    ns = response_namespace(ApiKey.DESCRIBE_LOG_DIRS, int(message.__version__))
    wanted = wanted_partitions(message)
    results = []
    for directory in log_dirs:
        path = os.path.abspath(directory)
        try:
            total, usable = volume_bytes(directory)
        except OSError:
            results.append(make(ns.DescribeLogDirsResult, error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path,
                                topics=()))
            continue
        by_topic: dict[str, list[Any]] = {}
        for topic, index, log, is_future in logs_in(host, directory):
            if wanted is not None and (topic, index) not in wanted:
                continue
            by_topic.setdefault(topic, []).append(make(
                ns.DescribeLogDirsPartition, partition_index=index, partition_size=log.size_in_bytes(),
                offset_lag=offset_lag(host, topic, index, log, is_future), is_future_key=is_future))
        topics = tuple(make(ns.DescribeLogDirsTopic, name=name, partitions=tuple(parts))
                       for name, parts in sorted(by_topic.items()))
        results.append(make(ns.DescribeLogDirsResult, error_code=ErrorCode.NONE, log_dir=path, topics=topics,
                            total_bytes=total, usable_bytes=usable))
    return make(ns.DescribeLogDirsResponse, error_code=ErrorCode.NONE, results=tuple(results))


def alter_replica_log_dirs(mover: MoveRequests, message: Any) -> Any:
    """Each (path, topic, partition) of the request handed to the mover; a partition named under two paths is
    answered for each (the last one wins, as Kafka's map of the request does)."""
    ns = response_namespace(ApiKey.ALTER_REPLICA_LOG_DIRS, int(message.__version__))
    by_topic: dict[str, list[Any]] = {}
    for entry in message.dirs:
        for topic in entry.topics:
            for index in topic.partitions:
                error = mover.request(str(topic.name), int(index), str(entry.path))
                by_topic.setdefault(str(topic.name), []).append(
                    make(ns.AlterReplicaLogDirPartitionResult, partition_index=int(index), error_code=error))
    results = tuple(make(ns.AlterReplicaLogDirTopicResult, topic_name=name, partitions=tuple(parts))
                    for name, parts in by_topic.items())
    return make(ns.AlterReplicaLogDirsResponse, results=results)
