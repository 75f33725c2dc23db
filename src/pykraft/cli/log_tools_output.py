"""Output of `pykraft delete-records` and `pykraft log-dirs`, as Kafka 4.x's DeleteRecordsCommand and
LogDirsCommand print it (pure: strings from results).

Both Kafka tools print Java `HashMap`s: their iteration order (and so the order of the lines, of the JSON keys and
of the list entries) is the bucket order of the keys' Java hash codes, which `java_hash_order` reproduces (a
`HashMap` of n entries has 16 buckets, doubled while n exceeds three quarters of them; entries of one bucket keep
the order they were put in, which here is sorted order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pykraft.protocol.errors import ErrorCode

K = TypeVar("K")

# Kafka's exception class and default message per error code (org.apache.kafka.common.protocol.Errors), for the
# codes these tools can meet.
JAVA_ERRORS: Mapping[ErrorCode, tuple[str, str]] = {
    ErrorCode.OFFSET_OUT_OF_RANGE: ("OffsetOutOfRangeException",
                                    "The requested offset is not within the range of offsets maintained by the "
                                    "server."),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ("UnknownTopicOrPartitionException",
                                           "This server does not host this topic-partition."),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ("NotLeaderOrFollowerException",
                                       "For requests intended only for the leader, this error indicates that the "
                                       "broker is not the current leader. For requests intended for any replica, "
                                       "this error indicates that the broker is not a replica of the topic "
                                       "partition."),
    ErrorCode.REQUEST_TIMED_OUT: ("TimeoutException", "The request timed out."),
    ErrorCode.POLICY_VIOLATION: ("PolicyViolationException",
                                 "Request parameters do not satisfy the configured policy."),
    ErrorCode.INVALID_TOPIC_EXCEPTION: ("InvalidTopicException",
                                        "The request attempted to perform an operation on an invalid topic."),
    ErrorCode.KAFKA_STORAGE_ERROR: ("KafkaStorageException", "Disk error when trying to access log file on the disk."),
    ErrorCode.LOG_DIR_NOT_FOUND: ("LogDirNotFoundException",
                                  "The user-specified log directory is not found in the broker config."),
    ErrorCode.LEADER_NOT_AVAILABLE: ("LeaderNotAvailableException",
                                     "There is no leader for this topic-partition as we are in the middle of a "
                                     "leadership election."),
    ErrorCode.REPLICA_NOT_AVAILABLE: ("ReplicaNotAvailableException",
                                      "The replica is not available for the requested topic-partition."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: ("TopicAuthorizationException", "Topic authorization failed."),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: ("ClusterAuthorizationException", "Cluster authorization failed."),
}
ERRORS_PACKAGE = "org.apache.kafka.common.errors."


def java_exception(code: ErrorCode) -> tuple[str, str]:
    """(fully qualified class name, message) of Kafka's exception for `code`."""
    name, message = JAVA_ERRORS.get(code, ("UnknownServerException",
                                           "The server experienced an unexpected error when processing the request."))
    return ERRORS_PACKAGE + name, message


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    data = text.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = _int32(31 * h + (data[i] << 8 | data[i + 1]))
    return h


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's `TopicPartition.hashCode`."""
    return _int32(31 * _int32(31 + partition) + java_string_hash(topic))


def java_hash_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """`keys` in the order a `java.util.HashMap` holding them iterates."""
    keys = list(keys)
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: K) -> int:
        h = hash_of(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: one bucket keeps the given order


def _java_map(entries: Mapping[str, Any]) -> dict[str, Any]:
    return {k: entries[k] for k in java_hash_order(sorted(entries), java_string_hash)}


# ---- delete-records ----------------------------------------------------------------------------------------------
def delete_records_lines(results: Mapping[tuple[str, int], int | ErrorCode]) -> list[str]:
    lines = ["Executing records delete operation", "Records delete operation completed:"]
    for topic, partition in java_hash_order(sorted(results), lambda tp: topic_partition_hash(*tp)):
        result = results[(topic, partition)]
        if isinstance(result, ErrorCode):
            name, message = java_exception(result)
            lines.append(f"partition: {topic}-{partition}\terror: {name}: {message}")
        else:
            lines.append(f"partition: {topic}-{partition}\tlow_watermark: {result}")
    return lines


# ---- log-dirs ----------------------------------------------------------------------------------------------------
def log_dirs_json(by_broker: Mapping[int, Iterable[Any]], topics: set[str]) -> str:
    """The JSON line of `kafka-log-dirs --describe` (`Any`: admin.log_admin.LogDirInfo)."""
    brokers = []
    for broker in java_hash_order(sorted(by_broker), lambda b: b):
        dirs = {d.path: d for d in by_broker[broker]}
        log_dirs = []
        for path in java_hash_order(sorted(dirs), java_string_hash):
            info = dirs[path]
            replicas = {(r.topic, r.partition): r for r in info.replicas if not topics or r.topic in topics}
            partitions = [_java_map({"partition": f"{r.topic}-{r.partition}", "size": r.size,
                                     "offsetLag": r.offset_lag, "isFuture": r.is_future})
                          for r in (replicas[k] for k in java_hash_order(sorted(replicas),
                                                                         lambda tp: topic_partition_hash(*tp)))]
            error = None if info.error is ErrorCode.NONE else java_exception(info.error)[0]
            log_dirs.append(_java_map({"logDir": path, "error": error, "partitions": partitions}))
        brokers.append(_java_map({"broker": broker, "logDirs": log_dirs}))
    return json.dumps(_java_map({"version": 1, "brokers": brokers}), separators=(",", ":"))


def comma_list(values: Iterable[int]) -> str:
    """A Java `HashSet<Integer>` joined with commas (small ids iterate in numeric order)."""
    return ",".join(str(v) for v in java_hash_order(sorted(set(values)), lambda v: v))
