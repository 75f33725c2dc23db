"""Admin operations on the brokers' partition logs: DeleteRecords, DescribeLogDirs, AlterReplicaLogDirs.

As Kafka's admin client does them (`DeleteRecordsHandler` over `PartitionLeaderStrategy`, `describeLogDirs`):
- `delete_records`: a Metadata lookup finds each partition's leader; one DeleteRecords per leader; a partition
  answered with a retriable error (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, LEADER_NOT_AVAILABLE, ...) is looked
  up and sent again until the deadline; any other error is that partition's result. A topic the metadata does not
  know, or a partition index it does not have, is UNKNOWN_TOPIC_OR_PARTITION (Kafka's client retries an unknown
  partition index until its timeout; this says so at once).
- `describe_log_dirs`: DescribeLogDirs (all topics) to each named broker at its Metadata address.
- `alter_replica_log_dirs`: AlterReplicaLogDirs to one broker.
Results are per partition or per broker: one bad partition does not fail the others.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_replica_log_dirs.v2 import request as arl_req
from kio.schema.delete_records.v2 import request as dr_req
from kio.schema.describe_log_dirs.v4 import request as dld_req
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

from pykraft.protocol.errors import ErrorCode

from .client import AdminClient
from .errors import AdminError

TopicPartition = tuple[str, int]
RETRY_BACKOFF_S = 0.1


@dataclass(frozen=True, slots=True)
class ReplicaLogInfo:
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    path: str
    error: ErrorCode
    replicas: tuple[ReplicaLogInfo, ...]
    total_bytes: int = -1
    usable_bytes: int = -1


def _code(value: Any) -> ErrorCode:
    return ErrorCode.of(int(getattr(value, "value", value)))


def _brokers(metadata: Any) -> dict[int, tuple[str, int]]:
    return {int(b.node_id): (str(b.host), int(b.port)) for b in metadata.brokers}


def _leaders(metadata: Any, wanted: Iterable[TopicPartition]) -> tuple[dict[TopicPartition, int], dict[TopicPartition, ErrorCode]]:
    """(leader of each partition that has one, errors of the partitions that cannot be sent now)."""
    topics = {str(t.name): t for t in metadata.topics if t.name is not None}
    leaders: dict[TopicPartition, int] = {}
    errors: dict[TopicPartition, ErrorCode] = {}
    for topic, index in wanted:
        found = topics.get(topic)
        code = _code(found.error_code) if found is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        part = None if found is None else next((p for p in found.partitions if int(p.partition_index) == index), None)
        if code is ErrorCode.NONE and part is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if code is ErrorCode.NONE and part is not None and int(part.leader_id) < 0:
            code = ErrorCode.LEADER_NOT_AVAILABLE
        if code is ErrorCode.NONE and part is not None:
            leaders[(topic, index)] = int(part.leader_id)
        else:
            errors[(topic, index)] = code
    return leaders, errors


def _delete_request(offsets: Mapping[TopicPartition, int], timeout_ms: int) -> dr_req.DeleteRecordsRequest:
    by_topic: dict[str, list[dr_req.DeleteRecordsPartition]] = {}
    for (topic, index), offset in offsets.items():
        by_topic.setdefault(topic, []).append(dr_req.DeleteRecordsPartition(partition_index=i32(index),
                                                                            offset=i64(offset)))
    return dr_req.DeleteRecordsRequest(
        topics=tuple(dr_req.DeleteRecordsTopic(name=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items()),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)))


async def delete_records(client: AdminClient, offsets: Mapping[TopicPartition, int],
                         deadline_s: float = 60.0) -> dict[TopicPartition, int | AdminError]:
    """Each partition's new low watermark, or the error that refused it (see the module docstring)."""
    results: dict[TopicPartition, int | AdminError] = {}
    pending = dict(offsets)
    deadline = time.monotonic() + deadline_s
    last: dict[TopicPartition, ErrorCode] = {}
    while pending:
        metadata = await client.metadata(sorted({t for t, _ in pending}))
        leaders, errors = _leaders(metadata, pending)
        for tp, code in errors.items():
            if code.retriable and code is not ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:  # the lookup fails those for good
                last[tp] = code
            else:
                results[tp] = AdminError(code)
                pending.pop(tp)
        addresses = _brokers(metadata)
        for leader in sorted(set(leaders.values())):
            batch = {tp: pending[tp] for tp, b in leaders.items() if b == leader}
            address = addresses.get(leader)
            if address is None:
                last.update(dict.fromkeys(batch, ErrorCode.LEADER_NOT_AVAILABLE))
                continue
            response = await client.node_call(address, "DeleteRecords",
                                              _delete_request(batch, client.server_timeout_ms()))
            for topic in response.topics:
                for part in topic.partitions:
                    tp = (str(topic.name), int(part.partition_index))
                    code = _code(part.error_code)
                    if tp not in pending:
                        continue
                    if code is ErrorCode.NONE:
                        results[tp] = int(part.low_watermark)
                        pending.pop(tp)
                    elif code.retriable:
                        last[tp] = code
                    else:
                        results[tp] = AdminError(code)
                        pending.pop(tp)
        if pending and time.monotonic() + RETRY_BACKOFF_S >= deadline:
            for tp in pending:
                results[tp] = AdminError(ErrorCode.REQUEST_TIMED_OUT,
                                         f"gave up after {deadline_s:.0f} s (last: {last.get(tp, ErrorCode.NONE).name})")
            break
        if pending:
            await asyncio.sleep(RETRY_BACKOFF_S)
    return results


def _log_dirs(response: Any) -> list[LogDirInfo]:
    found = []
    for result in response.results:
        replicas = tuple(ReplicaLogInfo(str(t.name), int(p.partition_index), int(p.partition_size),
                                        int(p.offset_lag), bool(p.is_future_key))
                         for t in result.topics for p in t.partitions)
        found.append(LogDirInfo(str(result.log_dir), _code(result.error_code), replicas,
                                int(getattr(result, "total_bytes", -1)), int(getattr(result, "usable_bytes", -1))))
    return found


async def describe_log_dirs(client: AdminClient, broker_ids: Iterable[int]) -> dict[int, list[LogDirInfo] | AdminError]:
    """Every log directory of each broker (all topics), or the error that broker answered."""
    addresses = _brokers(await client.metadata([]))
    found: dict[int, list[LogDirInfo] | AdminError] = {}
    for broker in broker_ids:
        address = addresses.get(broker)
        if address is None:
            found[broker] = AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not in the metadata")
            continue
        response = await client.node_call(address, "DescribeLogDirs", dld_req.DescribeLogDirsRequest(topics=None))
        code = _code(getattr(response, "error_code", 0))
        found[broker] = AdminError(code) if code is not ErrorCode.NONE else _log_dirs(response)
    return found


async def alter_replica_log_dirs(client: AdminClient, broker: int,
                                 moves: Mapping[TopicPartition, str]) -> dict[TopicPartition, ErrorCode]:
    """Ask `broker` to move its replicas of `moves` into the given log directories."""
    addresses = _brokers(await client.metadata([]))
    address = addresses.get(broker)
    if address is None:
        raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not in the metadata")
    by_dir: dict[str, dict[str, list[int]]] = {}
    for (topic, index), path in moves.items():
        by_dir.setdefault(path, {}).setdefault(topic, []).append(index)
    message = arl_req.AlterReplicaLogDirsRequest(dirs=tuple(
        arl_req.AlterReplicaLogDir(path=path, topics=tuple(
            arl_req.AlterReplicaLogDirTopic(name=TopicName(t), partitions=tuple(i32(i) for i in ps))
            for t, ps in topics.items()))
        for path, topics in by_dir.items()))
    response = await client.node_call(address, "AlterReplicaLogDirs", message)
    return {(str(t.topic_name), int(p.partition_index)): _code(p.error_code)
            for t in response.results for p in t.partitions}
