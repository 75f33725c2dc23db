"""A producer client for the tools (console-producer, producer-perf-test): Kafka's producer settings, partitioning
and delivery rules on the project's own codecs and transport.

- `send()` places a record (the partition asked for, else Kafka's partitioner: partitioner.py) into its
  partition's open batch and returns a future of its `RecordMetadata`. A batch is sent when it reaches
  `batch.size` bytes, when it is `linger.ms` old, or on `flush()`; one Produce per leader carries every ready
  batch for it, at most one batch per partition in flight, so records of a partition stay in order.
- `acks` 0 (no answer is awaited: the request goes one way), 1 or all (-1); `compression.type`; with
  `enable.idempotence` (Kafka's default, which needs acks=all) the producer gets an id (InitProducerId) and numbers
  each partition's batches, so a retried batch the leader already has is not written twice.
- A batch failing with a retriable error (the leader moved, not enough replicas, a lost connection, ...) is sent
  again after `retry.backoff.ms` and new metadata, while `retries` and `delivery.timeout.ms` allow; then its
  records fail with Kafka's exception text.
Settings the producer does not implement are reported by `producer_settings`, never silently taken.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.init_producer_id.v4 import request as ip_req
from kio.schema.produce.v9 import request as produce_req
from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode
from pykraft.records import Compression, SimpleRecord
from pykraft.records.producer_batch import encode_producer_batch

from .brokers import LEADER_MOVED, BrokerClient, Retry
from .connect import SettingsError
from .error_texts import exception_text
from .model import error_code_of
from .partitioner import StickyPartitioner, partition_for_key

__all__ = ["Producer", "ProducerError", "ProducerSettings", "RecordMetadata", "producer_settings"]

TopicPartition = tuple[str, int]
RECORD_OVERHEAD = 21  # about what a record's framing adds to its key and value (varints, attributes, deltas)
RETRIABLE = LEADER_MOVED | {ErrorCode.CORRUPT_MESSAGE, ErrorCode.NETWORK_EXCEPTION,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
# Keys the tools handle themselves or that only name Java classes this producer has no use for.
HANDLED = {"bootstrap.servers", "client.id", "key.serializer", "value.serializer", "security.protocol",
           "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "default.api.timeout.ms",
           "retry.backoff.max.ms"}


class ProducerError(Exception):
    """A record could not be delivered; `str()` is Kafka's exception text."""


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    acks: int = -1
    compression: Compression = Compression.NONE
    linger_ms: int = 5
    batch_size: int = 16384
    retries: int = 2147483647
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    max_block_ms: int = 60000
    max_request_size: int = 1048576
    buffer_memory: int = 33554432
    idempotence: bool = True


_INTS = {"linger.ms": "linger_ms", "batch.size": "batch_size", "retries": "retries",
         "retry.backoff.ms": "retry_backoff_ms", "request.timeout.ms": "request_timeout_ms",
         "delivery.timeout.ms": "delivery_timeout_ms", "max.block.ms": "max_block_ms",
         "max.request.size": "max_request_size", "buffer.memory": "buffer_memory"}


def producer_settings(props: Mapping[str, str]) -> tuple[ProducerSettings, list[str]]:
    """The settings from Kafka's producer keys, and the keys given that this producer does not implement.
    SettingsError: a value Kafka's producer refuses (its ConfigException wording)."""
    values: dict[str, Any] = {}
    for key, name in _INTS.items():
        if key in props:
            try:
                values[name] = int(props[key].strip())
            except ValueError:
                raise SettingsError(f"Invalid value {props[key]} for configuration {key}: Not a number of type "
                                    f"INT") from None
    acks = props.get("acks", "all").strip().lower()
    if acks not in ("all", "-1", "0", "1"):
        raise SettingsError(f'Invalid value {props["acks"]} for configuration acks: String must be one of: all, '
                            f'-1, 0, 1')
    values["acks"] = -1 if acks == "all" else int(acks)
    codec = props.get("compression.type", "none").strip().lower()
    if codec not in ("none", "gzip", "snappy", "lz4", "zstd"):
        raise SettingsError(f"Invalid value {codec} for configuration compression.type: String must be one of: "
                            f"none, gzip, snappy, lz4, zstd")
    values["compression"] = Compression[codec.upper()]
    explicit = props.get("enable.idempotence")
    idempotence = (explicit or "true").strip().lower() == "true"
    if explicit is not None and idempotence and values["acks"] != -1:
        raise SettingsError("Must set acks to all in order to use the idempotent producer. Otherwise we cannot "
                            "guarantee idempotence.")
    values["idempotence"] = idempotence and values["acks"] == -1
    known = HANDLED | set(_INTS) | {"acks", "compression.type", "enable.idempotence"}
    return ProducerSettings(**values), sorted(k for k in props if k not in known)


@dataclass
class _Batch:
    tp: TopicPartition
    created: float
    records: list[SimpleRecord] = field(default_factory=list)
    futures: list[asyncio.Future[RecordMetadata]] = field(default_factory=list)
    size: int = 0
    encoded: bytes | None = None
    attempts: int = 0


class Producer:
    def __init__(self, client: BrokerClient, settings: ProducerSettings, rng: random.Random | None = None) -> None:
        self.client, self.settings = client, settings
        self._sticky = StickyPartitioner(settings.batch_size, rng or random.Random())
        self._open: dict[TopicPartition, _Batch] = {}
        self._ready: list[_Batch] = []
        self._in_flight: set[TopicPartition] = set()
        self._counts: dict[str, int] = {}
        self._sequences: dict[TopicPartition, int] = {}
        self._producer_id, self._epoch = -1, -1
        self._wake = asyncio.Event()
        self._flushing = 0
        self._sender: asyncio.Task[None] | None = None
        self._correlation = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._buffered = 0  # bytes of records not yet settled (bounded by buffer.memory)
        self._drained = asyncio.Event()

    async def start(self) -> None:
        if self.settings.idempotence:
            message = ip_req.InitProducerIdRequest(
                transactional_id=None, transaction_timeout=i32Timedelta.parse(datetime.timedelta(minutes=1)),
                producer_id=ProducerId(-1), producer_epoch=i16(-1))
            answer = await self.client.call(None, message, "InitProducerId")
            code = error_code_of(answer.error_code)
            if code != ErrorCode.NONE:
                raise ProducerError(exception_text(code))
            self._producer_id, self._epoch = int(answer.producer_id), int(answer.producer_epoch)
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())

    async def partitions_of(self, topic: str) -> int:
        count = self._counts.get(topic)
        if count:
            return count
        deadline = time.monotonic() + self.settings.max_block_ms / 1000
        while True:
            metadata = await self.client.metadata([topic], auto_create=True)
            found = metadata.topics.get(topic)
            if found is not None and found.partitions:
                self._counts[topic] = len(found.partitions)
                return self._counts[topic]
            code = metadata.topic_errors.get(topic)
            if code not in (None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE):
                raise ProducerError(exception_text(code))
            if time.monotonic() >= deadline:
                raise ProducerError(f"org.apache.kafka.common.errors.TimeoutException: Topic {topic} not present in "
                                    f"metadata after {self.settings.max_block_ms} ms.")
            await asyncio.sleep(self.settings.retry_backoff_ms / 1000)

    async def send(self, topic: str, value: bytes | None, key: bytes | None = None,
                   headers: Sequence[tuple[str, bytes | None]] = (), partition: int | None = None,
                   timestamp: int | None = None) -> asyncio.Future[RecordMetadata]:
        count = await self.partitions_of(topic)
        size = RECORD_OVERHEAD + len(key or b"") + len(value or b"") + sum(len(k) + len(v or b"") for k, v in headers)
        if size > self.settings.max_request_size:
            raise ProducerError(f"org.apache.kafka.common.errors.RecordTooLargeException: The message is {size} bytes "
                                f"when serialized which is larger than {self.settings.max_request_size}, which is "
                                f"the value of the max.request.size configuration.")
        await self._reserve(size)
        if partition is None:
            partition = (partition_for_key(key, count) if key is not None
                         else self._sticky.partition(topic, count, size))
        elif not 0 <= partition < count:
            raise ProducerError(f"java.lang.IllegalArgumentException: Invalid partition given with record: "
                                f"{partition} is not in the range [0...{count}).")
        tp = (topic, partition)
        batch = self._open.get(tp)
        if batch is None or batch.size + size > self.settings.batch_size and batch.records:
            if batch is not None:
                self._ready.append(self._open.pop(tp))
            batch = self._open[tp] = _Batch(tp, time.monotonic())
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        batch.records.append(SimpleRecord(value, key, timestamp, tuple(headers)))
        batch.futures.append(future)
        batch.size += size
        if batch.size >= self.settings.batch_size or self.settings.linger_ms <= 0:
            self._ready.append(self._open.pop(tp))
        self._wake.set()
        return future

    async def _reserve(self, size: int) -> None:
        """Wait, up to max.block.ms, until `size` more bytes fit in buffer.memory (Kafka's send blocks so)."""
        deadline = time.monotonic() + self.settings.max_block_ms / 1000
        while self._buffered and self._buffered + size > self.settings.buffer_memory:
            self._drained.clear()
            self._wake.set()
            try:
                await asyncio.wait_for(self._drained.wait(), max(deadline - time.monotonic(), 0.0))
            except asyncio.TimeoutError:
                raise ProducerError(f"org.apache.kafka.common.errors.TimeoutException: Failed to allocate memory "
                                    f"within the configured max blocking time {self.settings.max_block_ms} ms.") \
                    from None
        self._buffered += size

    def _release(self, batch: _Batch) -> None:
        self._buffered -= batch.size
        self._drained.set()

    async def flush(self) -> None:
        self._flushing += 1
        try:
            futures = [f for b in [*self._open.values(), *self._ready] for f in b.futures]
            self._wake.set()
            if futures:
                await asyncio.wait(futures)
            while self._tasks:
                await asyncio.wait(list(self._tasks))
        finally:
            self._flushing -= 1

    async def close(self) -> None:
        await self.flush()
        if self._sender is not None:
            self._sender.cancel()
            try:
                await self._sender
            except asyncio.CancelledError:
                pass

    # ---- the sender -------------------------------------------------------------------------------------------
    def _due(self, now: float) -> float | None:
        """Move batches whose linger expired (or all, while flushing) to the ready list; the next expiry."""
        linger = self.settings.linger_ms / 1000
        next_due = None
        for tp, batch in list(self._open.items()):
            if self._flushing or now - batch.created >= linger:
                self._ready.append(self._open.pop(tp))
            else:
                due = batch.created + linger
                next_due = due if next_due is None else min(next_due, due)
        return next_due

    async def _send_loop(self) -> None:
        while True:
            next_due = self._due(time.monotonic())
            sendable = [b for b in self._ready if b.tp not in self._in_flight]
            if sendable:
                taken: set[TopicPartition] = set()
                chosen = []
                for batch in sendable:
                    if batch.tp not in taken:  # one batch per partition per request: order is kept
                        taken.add(batch.tp)
                        chosen.append(batch)
                for batch in chosen:
                    self._ready.remove(batch)
                    self._in_flight.add(batch.tp)
                task = asyncio.get_running_loop().create_task(self._deliver(chosen))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self._wake.clear()
            timeout = None if next_due is None else max(next_due - time.monotonic(), 0.0)
            if not sendable:
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
            else:
                await asyncio.sleep(0)

    async def _deliver(self, batches: list[_Batch]) -> None:
        """Send `batches` to their leaders; settle each one or put it back for a retry."""
        try:
            metadata = await self.client.metadata(sorted({b.tp[0] for b in batches}))
        except Exception as exc:  # no metadata: every batch is retried or fails
            await self._retry_all(batches, f"{exc}")
            return
        by_leader: dict[int, list[_Batch]] = {}
        for batch in batches:
            info = metadata.partition(*batch.tp)
            if info is None or info.leader is None or info.leader not in metadata.brokers:
                await self._retry_all([batch], ErrorCode.LEADER_NOT_AVAILABLE.name)
                continue
            by_leader.setdefault(info.leader, []).append(batch)
        results = await asyncio.gather(*(self._to_leader(leader, group) for leader, group in by_leader.items()),
                                       return_exceptions=True)
        for group, result in zip(by_leader.values(), results):
            if isinstance(result, Exception):  # a bug or an answer we cannot read: fail, never hang the caller
                for batch in group:
                    self._settle(batch, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1, f"{type(result).__name__}: {result}")

    async def _to_leader(self, leader: int, batches: list[_Batch]) -> None:
        for batch in batches:
            if batch.encoded is None:
                sequence = -1
                if self._producer_id >= 0:
                    sequence = self._sequences.get(batch.tp, 0)
                    self._sequences[batch.tp] = sequence + len(batch.records)
                batch.encoded = encode_producer_batch(
                    batch.records, timestamp_ms=int(time.time() * 1000), compression=self.settings.compression,
                    producer_id=self._producer_id, producer_epoch=self._epoch, base_sequence=sequence)
        topics: dict[str, list[Any]] = {}
        for batch in batches:
            assert batch.encoded is not None  # encoded above
            topics.setdefault(batch.tp[0], []).append(produce_req.PartitionProduceData(
                index=i32(batch.tp[1]), records=Records(batch.encoded)))
        message = produce_req.ProduceRequest(
            transactional_id=None, acks=i16(self.settings.acks),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=self.settings.request_timeout_ms)),
            topic_data=tuple(produce_req.TopicProduceData(name=TopicName(t), partition_data=tuple(p))
                             for t, p in topics.items()))
        try:
            address = await self.client.address_of(leader)
            if self.settings.acks == 0:
                self._correlation += 1
                await self.client.send_one_way(address, message, self._correlation)
                for batch in batches:
                    self._settle(batch, ErrorCode.NONE, -1, -1)
                return
            response = await self.client.exchange(address, message, self.settings.request_timeout_ms + 5000)
        except Retry as retry:
            await self._retry_all(batches, retry.reason)
            return
        answers = {(str(t.name), int(p.index)): p for t in response.responses for p in t.partition_responses}
        for batch in batches:
            answer = answers.get(batch.tp)
            code = ErrorCode.UNKNOWN_SERVER_ERROR if answer is None else error_code_of(answer.error_code)
            if answer is not None and code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._settle(batch, ErrorCode.NONE, int(answer.base_offset), _millis(answer.log_append_time))
            elif code in RETRIABLE:
                await self._retry_all([batch], code.name)
            else:
                self._settle(batch, code, -1, -1, answer.error_message if answer is not None else None)

    async def _retry_all(self, batches: list[_Batch], reason: str) -> None:
        now = time.monotonic()
        for batch in batches:
            batch.attempts += 1
            expired = (now - batch.created) * 1000 >= self.settings.delivery_timeout_ms
            if expired or batch.attempts > self.settings.retries:
                text = (f"org.apache.kafka.common.errors.TimeoutException: Expiring {len(batch.records)} record(s) "
                        f"for {batch.tp[0]}-{batch.tp[1]}:{self.settings.delivery_timeout_ms} ms has passed since "
                        f"batch creation" if expired else f"the last attempt failed: {reason}")
                self._fail(batch, text)
                self._release(batch)
        await asyncio.sleep(self.settings.retry_backoff_ms / 1000)
        for batch in batches:
            self._in_flight.discard(batch.tp)
            if not all(f.done() for f in batch.futures):
                self._ready.insert(0, batch)
        self._wake.set()

    def _settle(self, batch: _Batch, code: ErrorCode, base_offset: int, append_time: int,
                message: str | None = None) -> None:
        self._in_flight.discard(batch.tp)
        self._wake.set()
        self._release(batch)
        if code != ErrorCode.NONE:
            self._fail(batch, exception_text(code, message))
            return
        for index, (record, future) in enumerate(zip(batch.records, batch.futures)):
            if not future.done():
                offset = base_offset + index if base_offset >= 0 else -1
                timestamp = append_time if append_time >= 0 else (record.timestamp_ms or -1)
                future.set_result(RecordMetadata(batch.tp[0], batch.tp[1], offset, timestamp))

    def _fail(self, batch: _Batch, text: str) -> None:
        for future in batch.futures:
            if not future.done():
                future.set_exception(ProducerError(text))


def _millis(value: Any) -> int:
    """A timestamp field as kio reads it (None, a datetime, or a number) in epoch milliseconds; -1 for none."""
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)
