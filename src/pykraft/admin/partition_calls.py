"""Requests about partitions, each sent to the partition's leader: ListOffsets (Kafka's Admin.listOffsets and the
consumer's offset lookups) and the fan-out they share with Produce and Fetch.

`by_leader` groups the asked partitions by their leader in a fresh Metadata answer; partitions of unknown topics
or without a partition of that index are answered UNKNOWN_TOPIC_OR_PARTITION at once, partitions whose leader is
missing (LEADER_NOT_AVAILABLE) or moved (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...) are asked again after
new metadata, until the deadline.

ListOffsets timestamps: -1 latest (the high watermark), -2 earliest (the log start), -3 the record with the largest
timestamp, t >= 0 the first record at or after t (offset -1 when there is none, Kafka's UNKNOWN_OFFSET).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kio.schema.list_offsets.v7 import request as lo_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from pykraft.protocol.errors import ErrorCode

from .brokers import LEADER_MOVED, BrokerClient, ClusterMetadata, Retry
from .model import error_code_of

__all__ = ["EARLIEST", "LATEST", "MAX_TIMESTAMP", "OffsetAnswer", "TopicPartition", "by_leader", "list_offsets",
           "fan_out"]

TopicPartition = tuple[str, int]
T = TypeVar("T")
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
UNKNOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    error: ErrorCode
    offset: int = UNKNOWN_OFFSET
    timestamp: int = -1
    leader_epoch: int = -1


def by_leader(metadata: ClusterMetadata, partitions: Iterable[TopicPartition]
              ) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, ErrorCode]]:
    """(leader id -> its partitions, partition -> error for those that have no usable leader)."""
    leaders: dict[int, list[TopicPartition]] = {}
    errors: dict[TopicPartition, ErrorCode] = {}
    for tp in partitions:
        topic, index = tp
        if topic in metadata.topic_errors or topic not in metadata.topics:
            errors[tp] = metadata.topic_errors.get(topic, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        info = metadata.partition(topic, index)
        if info is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif info.leader is None or info.leader not in metadata.brokers:
            errors[tp] = ErrorCode.LEADER_NOT_AVAILABLE
        else:
            leaders.setdefault(info.leader, []).append(tp)
    return leaders, errors


async def fan_out(client: BrokerClient, what: str, partitions: Iterable[TopicPartition],
                  ask: Callable[[int, list[TopicPartition]], Awaitable[Mapping[TopicPartition, T]]],
                  error_of: Callable[[T], ErrorCode], failed: Callable[[ErrorCode], T],
                  deadline_ms: int | None = None) -> dict[TopicPartition, T]:
    """Ask each partition's leader (`ask(leader, partitions)`, concurrently per leader) until every partition has
    an answer that is not "the leader moved"; partitions still without one at the deadline get `failed(code)`."""
    pending = list(dict.fromkeys(partitions))
    done: dict[TopicPartition, T] = {}
    last: dict[TopicPartition, ErrorCode] = {}

    async def attempt() -> None:
        metadata = await client.metadata(sorted({t for t, _ in pending}))
        leaders, errors = by_leader(metadata, pending)
        for tp, code in errors.items():
            if code == ErrorCode.LEADER_NOT_AVAILABLE:
                last[tp] = code
            else:
                done[tp] = failed(code)
        answers = await asyncio.gather(*(ask(leader, tps) for leader, tps in leaders.items()),
                                       return_exceptions=True)
        for (leader, tps), answer in zip(leaders.items(), answers):
            if isinstance(answer, Retry):
                continue  # that leader did not answer: its partitions are asked again
            if isinstance(answer, BaseException):
                raise answer
            for tp in tps:
                result = answer.get(tp)
                code = ErrorCode.UNKNOWN_SERVER_ERROR if result is None else error_of(result)
                if result is not None and code not in LEADER_MOVED:
                    done[tp] = result
                else:
                    last[tp] = code
        pending[:] = [tp for tp in pending if tp not in done]
        if pending:
            raise Retry(f"no answer yet for {len(pending)} partition(s) ({_codes(last, pending)})", refresh=True)

    try:
        await client.retrying(what, attempt, deadline_ms)
    except Exception:
        if not done:
            raise
    for tp in pending:
        done.setdefault(tp, failed(last.get(tp, ErrorCode.REQUEST_TIMED_OUT)))
    return done


def _codes(last: Mapping[TopicPartition, ErrorCode], pending: Iterable[TopicPartition]) -> str:
    return ", ".join(sorted({last.get(tp, ErrorCode.REQUEST_TIMED_OUT).name for tp in pending}))


async def list_offsets(client: BrokerClient, specs: Mapping[TopicPartition, int], *, isolation_level: int = 0,
                       deadline_ms: int | None = None) -> dict[TopicPartition, OffsetAnswer]:
    """ListOffsets v7 for each partition at its leader; `specs` maps a partition to LATEST, EARLIEST,
    MAX_TIMESTAMP or a timestamp."""
    async def ask(leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, OffsetAnswer]:
        topics: dict[str, list[Any]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(lo_req.ListOffsetsPartition(
                partition_index=i32(index), timestamp=i64(specs[(topic, index)])))
        message = lo_req.ListOffsetsRequest(replica_id=BrokerId(-1), isolation_level=i8(isolation_level), topics=tuple(
            lo_req.ListOffsetsTopic(name=TopicName(t), partitions=tuple(p)) for t, p in topics.items()))
        response = await client.exchange(await client.address_of(leader), message)
        return {(t.name, int(p.partition_index)): OffsetAnswer(error_code_of(p.error_code), int(p.offset),
                                                               int(p.timestamp), int(p.leader_epoch))
                for t in response.topics for p in t.partitions}

    return await fan_out(client, "ListOffsets", specs, ask, lambda a: a.error, lambda code: OffsetAnswer(code),
                         deadline_ms)
