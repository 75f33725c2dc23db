"""Reading partitions for the tools' consumers (console-consumer, consumer-perf-test): Fetch v12 at each
partition's leader from the consumer's position, batches decoded with the project's record codec.

- `positions` maps each partition to the offset to read next; a position of EARLIEST or LATEST is first resolved
  with ListOffsets (Kafka's seekToBeginning / seekToEnd).
- One Fetch per leader (max.wait, min.bytes, max.bytes, max.partition.fetch.bytes, isolation.level); control
  batches are skipped (transaction markers), and so are records below the position (a compressed batch is
  returned whole). The position moves past each record returned.
- OFFSET_OUT_OF_RANGE applies auto.offset.reset (earliest, latest; none: an error); a moved or missing leader
  is looked up again at the next fetch.
"""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass
from typing import Any

from kio.schema.fetch.v12 import request as fetch_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from pykraft.protocol.errors import ErrorCode
from pykraft.records import RecordsError, iter_batches

from .brokers import LEADER_MOVED, BrokerClient, Retry
from .error_texts import exception_text
from .model import error_code_of
from .partition_calls import EARLIEST, LATEST, list_offsets

__all__ = ["ConsumedRecord", "FetchError", "FetchSettings", "Fetcher"]

TopicPartition = tuple[str, int]
READ_COMMITTED = 1


class FetchError(Exception):
    """A partition cannot be read on (OFFSET_OUT_OF_RANGE with auto.offset.reset=none, a topic deleted, ...)."""


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str  # CreateTime or LogAppendTime, as Kafka's TimestampType prints
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchSettings:
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    partition_max_bytes: int = 1048576
    isolation_level: int = 0
    auto_offset_reset: str = "latest"


class Fetcher:
    def __init__(self, client: BrokerClient, settings: FetchSettings) -> None:
        self.client, self.settings = client, settings
        self.positions: dict[TopicPartition, int] = {}
        self.high_watermarks: dict[TopicPartition, int] = {}

    def assign(self, positions: dict[TopicPartition, int]) -> None:
        """Read these partitions from these offsets (EARLIEST / LATEST resolved at the next fetch)."""
        self.positions = dict(positions)

    async def _resolve(self) -> None:
        special = {tp: spec for tp, spec in self.positions.items() if spec in (EARLIEST, LATEST)}
        if not special:
            return
        answers = await list_offsets(self.client, special, isolation_level=self.settings.isolation_level)
        for tp, answer in answers.items():
            if answer.error != ErrorCode.NONE:
                raise FetchError(exception_text(answer.error))
            self.positions[tp] = answer.offset

    def _reset_spec(self, tp: TopicPartition) -> int:
        policy = self.settings.auto_offset_reset
        if policy == "earliest":
            return EARLIEST
        if policy == "latest":
            return LATEST
        raise FetchError(f"org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Fetch position "
                         f"{self.positions[tp]} is out of range for partition {tp[0]}-{tp[1]}")

    async def fetch(self) -> list[ConsumedRecord]:
        """One round: a Fetch to the leader of every assigned partition; the records, in partition order."""
        await self._resolve()
        if not self.positions:
            await asyncio.sleep(self.settings.max_wait_ms / 1000)
            return []
        metadata = await self.client.metadata(sorted({t for t, _ in self.positions}))
        leaders: dict[int, list[TopicPartition]] = {}
        for tp in self.positions:
            info = metadata.partition(*tp)
            if info is None and tp[0] in metadata.topic_errors:
                raise FetchError(exception_text(metadata.topic_errors[tp[0]]))
            if info is not None and info.leader is not None and info.leader in metadata.brokers:
                leaders.setdefault(info.leader, []).append(tp)
        if not leaders:
            await asyncio.sleep(0.1)  # no leader known yet: ask again soon
            return []
        answers = await asyncio.gather(*(self._fetch_from(leader, tps) for leader, tps in leaders.items()),
                                       return_exceptions=True)
        records: list[ConsumedRecord] = []
        for answer in answers:
            if isinstance(answer, Retry):
                continue
            if isinstance(answer, BaseException):
                raise answer
            records += answer
        return records

    async def _fetch_from(self, leader: int, partitions: list[TopicPartition]) -> list[ConsumedRecord]:
        s = self.settings
        topics: dict[str, list[Any]] = {}
        for topic, index in partitions:
            topics.setdefault(topic, []).append(fetch_req.FetchPartition(
                partition=i32(index), current_leader_epoch=i32(-1), fetch_offset=i64(self.positions[(topic, index)]),
                last_fetched_epoch=i32(-1), log_start_offset=i64(-1), partition_max_bytes=i32(s.partition_max_bytes)))
        message = fetch_req.FetchRequest(
            cluster_id=None, replica_id=BrokerId(-1),
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=s.max_wait_ms)),
            min_bytes=i32(s.min_bytes), max_bytes=i32(s.max_bytes), isolation_level=i8(s.isolation_level),
            session_id=i32(0), session_epoch=i32(-1), rack_id="", forgotten_topics_data=(),
            topics=tuple(fetch_req.FetchTopic(topic=TopicName(t), partitions=tuple(p)) for t, p in topics.items()))
        address = await self.client.address_of(leader)
        response = await self.client.exchange(address, message, self.client.request_timeout_ms + s.max_wait_ms)
        found: list[ConsumedRecord] = []
        for topic in response.responses:
            for part in topic.partitions:
                tp = (str(topic.topic), int(part.partition_index))
                if tp in self.positions:
                    found += self._read_partition(tp, part)
        return found

    def _read_partition(self, tp: TopicPartition, part: Any) -> list[ConsumedRecord]:
        code = error_code_of(part.error_code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.positions[tp] = self._reset_spec(tp)
            return []
        if code in LEADER_MOVED or code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return []  # the next round asks for new metadata
        if code != ErrorCode.NONE:
            raise FetchError(exception_text(code))
        self.high_watermarks[tp] = int(part.high_watermark)
        return self._decode(tp, part.records or b"")

    def _decode(self, tp: TopicPartition, data: bytes | memoryview) -> list[ConsumedRecord]:
        position = self.positions[tp]
        found = []
        try:
            for batch in iter_batches(data, allow_truncated_tail=True):
                if batch.is_control:
                    position = max(position, batch.next_offset)
                    continue
                kind = "LogAppendTime" if batch.attributes & 0x08 else "CreateTime"
                for r in batch.records():
                    if r.offset < position:
                        continue
                    timestamp = batch.max_timestamp if kind == "LogAppendTime" else r.timestamp
                    found.append(ConsumedRecord(
                        tp[0], tp[1], r.offset, timestamp, kind, None if r.key is None else bytes(r.key),
                        None if r.value is None else bytes(r.value),
                        tuple((k, None if v is None else bytes(v)) for k, v in r.headers),
                        batch.partition_leader_epoch))
                    position = r.offset + 1
                position = max(position, batch.next_offset)
        except RecordsError as exc:
            raise FetchError(f"org.apache.kafka.common.KafkaException: Record batch for partition {tp[0]}-{tp[1]} "
                             f"at offset {position} is invalid: {exc}") from None
        self.positions[tp] = position
        return found
