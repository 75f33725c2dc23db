"""DeleteRecords (v0-v2, Kafka 4.x's range): move the log start of partitions this broker leads.

Each partition is started at once (node/hosts/record_deletion.py: checks, the log start moved); the answer then
waits, up to the request's TimeoutMs, until every partition's low watermark reached its new start (the followers
moved theirs, as their Fetch requests report). A partition still waiting at the timeout answers REQUEST_TIMED_OUT
with the low watermark it had when the deletion started; one whose leadership ended meanwhile answers
NOT_LEADER_OR_FOLLOWER (Kafka's DelayedDeleteRecords). A partition named twice is answered twice, each on its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

from pykraft.node.hosts.partitions import PartitionHost
from pykraft.node.hosts.record_deletion import DeletionStarted, delete_records
from pykraft.node.apis.wire_build import make, response_namespace


async def handle(host: PartitionHost, message: Any) -> Any:
    started: list[tuple[str, list[tuple[int, DeletionStarted]]]] = []
    for topic in message.topics:
        name = str(topic.name)
        started.append((name, [(int(p.partition_index), delete_records(host, name, int(p.partition_index),
                                                                       int(p.offset)))
                               for p in topic.partitions]))
    waiters = [s.waiter for _, parts in started for _, s in parts if s.waiter is not None]
    if waiters:
        timeout = max(message.timeout.total_seconds(), 0.0)
        await asyncio.wait(waiters, timeout=timeout)
    ns = response_namespace(ApiKey.DELETE_RECORDS, int(message.__version__))
    topics = []
    for name, parts in started:
        results = []
        for index, start in parts:
            error, low = _outcome(start)
            results.append(make(ns.DeleteRecordsPartitionResult, partition_index=index, low_watermark=low,
                                error_code=error))
        topics.append(make(ns.DeleteRecordsTopicResult, name=name, partitions=tuple(results)))
    return make(ns.DeleteRecordsResponse, topics=tuple(topics))


def _outcome(start: DeletionStarted) -> tuple[ErrorCode, int]:
    waiter = start.waiter
    if waiter is None:
        return start.error, start.low_watermark
    if waiter.done():
        return waiter.result()
    waiter.cancel()  # its LeaderState entry is skipped as done when the low watermark gets there
    return ErrorCode.REQUEST_TIMED_OUT, start.low_watermark
