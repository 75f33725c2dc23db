"""Fetch (v4+) from the partitions this broker leads, for consumers and for follower replicas.

- A consumer (replica id -1) reads whole batches up to the high watermark; a follower (replica id >= 0, with its
  broker epoch in ReplicaState from v15) reads up to the log end, and its fetch offset is its progress
  (`PartitionHost.on_follower_fetch`). A follower whose (fetch offset, last fetched epoch) is not in our history
  gets DivergingEpoch (v12+) and no records: it truncates and fetches again (replica_fetcher.py).
- Partition errors: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH against the request's current leader epoch, OFFSET_OUT_OF_RANGE. Every partition answer,
  error or empty, carries empty records, never null (librdkafka spins on null).
- The request waits up to MaxWaitMs for MinBytes, woken by every append or high watermark move.
- IsolationLevel READ_COMMITTED (1): a consumer reads below the last stable offset only, and gets the aborted
  transactions overlapping what it read (from the `.txnindex`), so it drops their records; every answer carries
  the partition's last stable offset. READ_UNCOMMITTED answers carry a null list, as Kafka's do.
Requests for `__cluster_metadata` are the raft core's (the caller routes them there).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pykraft.broker.fetch_answers import (CONSUMER, PartitionAnswer, PartitionFetch, answer_partition,
                                          leader_epoch_error)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC, METADATA_TOPIC_ID

from pykraft.node.hosts.partitions import PartitionHost
from pykraft.node.apis.wire_build import has_field, make, response_namespace

__all__ = ["CONSUMER", "fetch", "leader_epoch_error", "names_metadata_topic", "replica_of"]

READ_COMMITTED = 1

_PartitionAnswer = PartitionAnswer  # the pure answer, broker/fetch_answers.py


def names_metadata_topic(message: Any) -> bool:
    return any(getattr(t, "topic_id", None) == METADATA_TOPIC_ID or getattr(t, "topic", None) == METADATA_TOPIC
               for t in message.topics)


def replica_of(message: Any) -> tuple[int, int]:
    """(replica id, broker epoch) of a Fetch: ReplicaState from v15, the top-level ReplicaId before."""
    if has_field(message, "replica_state"):
        return int(message.replica_state.replica_id), int(message.replica_state.replica_epoch)
    return int(getattr(message, "replica_id", CONSUMER)), -1


async def fetch(host: PartitionHost, message: Any, clock: Any) -> Any:
    replica_id, broker_epoch = replica_of(message)
    committed = replica_id < 0 and int(getattr(message, "isolation_level", 0)) == READ_COMMITTED
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(message.max_wait.total_seconds(), 0)
    while True:
        changed = host.changed
        answers, total, urgent = _answer_all(host, message, replica_id, broker_epoch, clock(), committed)
        remaining = deadline - loop.time()
        if total >= int(message.min_bytes) or urgent or remaining <= 0:
            _count(host, answers, replica_id)
            return _response(int(message.__version__), answers)
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except asyncio.TimeoutError:
            pass


Answers = list[tuple[Any, "str | None", list[_PartitionAnswer]]]  # (request topic, its name, partition answers)


def _answer_all(host: PartitionHost, message: Any, replica_id: int, broker_epoch: int, now_ms: int,
                committed: bool = False) -> tuple[Answers, int, bool]:
    answers = []
    total = 0
    urgent = False
    for topic in message.topics:
        topic_id = getattr(topic, "topic_id", None)
        name = getattr(topic, "topic", None) if topic_id is None else host.cache.topic_name(topic_id)
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if topic_id is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        parts = []
        for p in topic.partitions:
            answer = _answer_one(host, name, unknown, p, replica_id, broker_epoch, now_ms, committed)
            total += len(answer.records)
            urgent = urgent or answer.error is not ErrorCode.NONE or answer.diverging is not None
            parts.append(answer)
        answers.append((topic, name, parts))
    return answers, total, urgent


def _count(host: PartitionHost, answers: Answers, replica_id: int) -> None:
    """BrokerTopicMetrics of the answer given (not of the looks a long poll took before it): a partition read
    each, and the record bytes sent, to a follower or to a consumer. Topics the broker does not know are left out,
    as Kafka answers them before counting."""
    stats = host.topic_stats
    for _, name, parts in answers:
        if name is None or host.cache.topic_id(name) is None:
            continue
        counters = stats.of(name)
        counters.total_fetch_requests += len(parts)
        sent = sum(len(a.records) for a in parts)
        if replica_id >= 0:
            counters.replication_bytes_out += sent
        else:
            counters.bytes_out += sent


def _answer_one(host: PartitionHost, name: str | None, unknown: ErrorCode, p: Any, replica_id: int,
                broker_epoch: int, now_ms: int, committed: bool = False) -> _PartitionAnswer:
    """One partition of a wire Fetch request, answered by broker/fetch_answers.py."""
    wanted = PartitionFetch(int(p.partition), int(p.fetch_offset), int(getattr(p, "current_leader_epoch", -1)),
                            int(getattr(p, "last_fetched_epoch", -1)), int(p.partition_max_bytes),
                            int(getattr(p, "log_start_offset", -1)), committed)
    return answer_partition(host, name, unknown, wanted, replica_id, broker_epoch, now_ms)


def _response(version: int, answers: Answers) -> Any:
    ns = response_namespace(ApiKey.FETCH, version)
    topics = []
    for topic, _, parts in answers:
        datas = []
        for a in parts:
            extra = {}
            if a.diverging is not None:
                extra["diverging_epoch"] = ns.EpochEndOffset(epoch=a.diverging[0], end_offset=a.diverging[1])
            aborted = None if a.aborted is None else tuple(
                ns.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in a.aborted)
            datas.append(make(ns.PartitionData, partition_index=a.index, error_code=a.error,
                              high_watermark=a.high_watermark, last_stable_offset=a.last_stable_offset,
                              log_start_offset=a.log_start_offset, aborted_transactions=aborted,
                              preferred_read_replica=-1, records=a.records, **extra))
        topics.append(make(ns.FetchableTopicResponse, topic=getattr(topic, "topic", ""),
                           topic_id=getattr(topic, "topic_id", None), partitions=tuple(datas)))
    return make(ns.FetchResponse, error_code=ErrorCode.NONE, session_id=0, responses=tuple(topics))
