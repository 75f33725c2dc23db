"""Produce v3-v12 to the partitions this broker leads (the data plane's write path).

Per partition: `PartitionHost.append_as_leader` (validation from headers, acks admission, idempotent sequence
check, in-place patch, append). acks=0 gets no answer (Kafka never sends one); acks=1 is answered once the batch is
in the leader's log; acks=all once the high watermark passed it, or REQUEST_TIMED_OUT after the request's
timeout. A Produce naming `__cluster_metadata` goes to the metadata write path (writes.py), as before.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC

from pykraft.node.hosts.partitions import AppendResult, PartitionHost
from pykraft.node.apis.wire_build import make, response_namespace

_MIN_TIMEOUT_S = 0.001


async def produce(host: PartitionHost, message: Any) -> Any | None:
    acks = int(message.acks)
    results: list[tuple[str, int, AppendResult]] = []
    for topic in message.topic_data:
        for data in topic.partition_data:
            if acks not in (-1, 0, 1):
                results.append((topic.name, int(data.index), AppendResult(ErrorCode.INVALID_REQUIRED_ACKS)))
                continue
            results.append((topic.name, int(data.index),
                            host.append_as_leader(topic.name, int(data.index), data.records, acks)))
    waiters = [r.waiter for _, _, r in results if r.waiter is not None and not r.waiter.done()]
    if waiters:
        timeout = max(message.timeout.total_seconds(), _MIN_TIMEOUT_S)
        await asyncio.wait(waiters, timeout=timeout)
    if acks == 0:
        return None
    return _response(int(message.__version__), results)


def _final_error(result: AppendResult) -> ErrorCode:
    waiter = result.waiter
    if result.error is not ErrorCode.NONE or waiter is None:
        return result.error
    return waiter.result() if waiter.done() else ErrorCode.REQUEST_TIMED_OUT


def _response(version: int, results: list[tuple[str, int, AppendResult]]) -> Any:
    ns = response_namespace(ApiKey.PRODUCE, version)
    by_topic: dict[str, list[Any]] = {}
    for name, index, result in results:
        error = _final_error(result)
        ok = error is ErrorCode.NONE
        by_topic.setdefault(name, []).append(make(
            ns.PartitionProduceResponse, index=index, error_code=error,
            base_offset=result.base_offset if ok else -1, log_start_offset=result.log_start_offset,
            log_append_time=_timestamp(result.log_append_time_ms) if ok else None,
            record_errors=(), error_message=None if ok else result.message))
    topics = tuple(make(ns.TopicProduceResponse, name=name, partition_responses=tuple(parts))
                   for name, parts in by_topic.items())
    return make(ns.ProduceResponse, responses=topics)


def _timestamp(ms: int) -> datetime.datetime | None:
    """Produce's log_append_time_ms: -1 (None) unless the topic is LogAppendTime."""
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def names_metadata_topic(message: Any) -> bool:
    return any(topic.name == METADATA_TOPIC for topic in message.topic_data)
