"""The data workload: producers writing to the simulated brokers' partitions, and the DeleteRecords admin.

A `Producer` (acks 0, 1 or all; idempotent or not) writes batches of 1-3 records with unique values, one batch in
flight per partition (max.in.flight 1), round robin over its partitions, until `until_ms`. It learns leaders as a
client's Metadata request would, from the metadata cache of a live broker it draws (which may be stale: the broker
then answers NOT_LEADER_OR_FOLLOWER). A batch is retried as it was (same sequence numbers when idempotent) after
a retriable error or no answer within `REQUEST_TIMEOUT_MS`, until answered; acknowledgements go to the data
checker (data_invariants.py). An idempotent producer has a producer id of its own (the InitProducerId answer,
drawn from the run), epoch 0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.batch import CRC_START
from pykraft.records.crc import crc32c
from pykraft.sim.engine.node import Status
from pykraft.sim.hosts.data_wire import DeleteRecordsRequest, DeleteRecordsResponse, ProduceRequest, ProduceResponse

if TYPE_CHECKING:
    from pykraft.sim.engine.world import World

PRODUCER_BASE = 2000  # endpoint ids of producers (raft clients are 1000+, the admin 999)
DELETE_ADMIN = 2900
REQUEST_TIMEOUT_MS = 1500
RETRY_BACKOFF_MS = 50
RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS,
                       ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       ErrorCode.REQUEST_TIMED_OUT, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH})


def idempotent_batch(values: list[bytes], producer_id: int, epoch: int, sequence: int, now_ms: int) -> bytes:
    """A batch as an idempotent producer sends it (producer id, epoch and base sequence in its header)."""
    out = bytearray(encode_batch([SimpleRecord(value=v) for v in values], base_offset=0, partition_leader_epoch=-1,
                                 timestamp_ms=now_ms))
    struct.pack_into(">qhi", out, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def leader_of(world: World, rng: Any, topic: str, partition: int) -> int | None:
    """The leader as a live broker's metadata cache has it (a Metadata request to a broker drawn at random)."""
    brokers = [n for _, n in sorted(world.nodes.items()) if hasattr(n, "cache") and n.status is Status.UP]
    if not brokers:
        return None
    cache = rng.choice(brokers).cache
    topic_id = cache.topic_id(topic)
    found = None if topic_id is None else cache.partition(topic_id, partition)
    return None if found is None or found.leader < 0 else found.leader


@dataclass
class _Batch:
    partition: int
    values: list[bytes]
    records: bytes
    request_id: int = 0
    attempts: int = 0


@dataclass
class ProducerStats:
    sent: int = 0
    acked: int = 0
    retries: int = 0
    gave_up: int = 0
    errors: dict[str, int] = field(default_factory=dict)


class Producer:
    def __init__(self, world: World, index: int, topic: str, partitions: int, acks: int, idempotent: bool,
                 interval_ms: int, until_ms: int) -> None:
        self.world = world
        self.id = PRODUCER_BASE + index
        self.topic, self.partitions, self.acks, self.idempotent = topic, partitions, acks, idempotent
        self.interval_ms, self.until_ms = interval_ms, until_ms
        self.rng = world.stream(f"producer-{index}")
        self.producer_id = 10_000 + index if idempotent else -1
        self.sequences = [0] * partitions
        self.in_flight: dict[int, _Batch] = {}  # partition -> its batch
        self.next_value = 0
        self.next_request = 0
        self.next_partition = 0
        self.stats = ProducerStats()
        world.endpoints[self.id] = self

    def start(self) -> None:
        self.world.scheduler.after(self.rng.randint(1, self.interval_ms), self._tick)

    def idle(self) -> bool:
        return not self.in_flight

    def describe(self) -> str:
        kind = "idempotent " if self.idempotent else ""
        return f"{kind}acks={'all' if self.acks == -1 else self.acks}"

    def _tick(self) -> Any:
        now = self.world.scheduler.now_ms
        if now >= self.until_ms:
            return None
        self.world.scheduler.after(self.rng.randint(1, 2 * self.interval_ms), self._tick)
        partition = self.next_partition
        self.next_partition = (partition + 1) % self.partitions
        if partition in self.in_flight:
            return None
        values = []
        for _ in range(self.rng.randint(1, 3)):
            values.append(f"p{self.id}:{self.next_value}".encode())
            self.next_value += 1
        if self.idempotent:
            records = idempotent_batch(values, self.producer_id, 0, self.sequences[partition], now)
            self.sequences[partition] += len(values)
        else:
            records = encode_batch([SimpleRecord(value=v) for v in values], base_offset=0, partition_leader_epoch=-1,
                                   timestamp_ms=now)
        batch = self.in_flight[partition] = _Batch(partition, values, records)
        return self._send(batch)

    def _send(self, batch: _Batch) -> Any:
        world = self.world
        self.next_request += 1
        batch.request_id = self.next_request
        batch.attempts += 1
        self.stats.sent += 1
        leader = leader_of(world, self.rng, self.topic, batch.partition)
        if self.acks == 0:  # nobody answers: the batch is done once sent (or dropped without a leader)
            del self.in_flight[batch.partition]
            world.data_checker.on_sent(self.topic, batch.partition, batch.values)  # type: ignore[attr-defined]
        else:
            world.scheduler.after(REQUEST_TIMEOUT_MS, self._timeout, batch.partition, batch.request_id)
        if leader is None:
            return self.id, "produce", f"{self.topic}-{batch.partition}: no leader known"
        world.send(self.id, leader, ProduceRequest(batch.request_id, self.topic, batch.partition, batch.records,
                                                   self.acks), "Produce")
        return self.id, "produce", f"{self.topic}-{batch.partition} -> {leader} ({len(batch.values)} records)"

    def _retry(self, partition: int, request_id: int) -> Any:
        batch = self.in_flight.get(partition)
        if batch is None or batch.request_id != request_id:
            return None
        self.stats.retries += 1
        return self._send(batch)

    def _timeout(self, partition: int, request_id: int) -> Any:
        return self._retry(partition, request_id)

    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope):
            return None
        answer = envelope.payload
        if not isinstance(answer, ProduceResponse):
            return None
        batch = next((b for b in self.in_flight.values() if b.request_id == answer.request_id), None)
        if batch is None:
            return None
        if answer.error is ErrorCode.NONE:
            del self.in_flight[batch.partition]
            self.stats.acked += 1
            self.world.data_checker.on_acked(  # type: ignore[attr-defined]
                self.topic, batch.partition, answer.base_offset, batch.values, self.acks, self.idempotent)
            return self.id, "produced", f"{self.topic}-{batch.partition} at {answer.base_offset}"
        self.stats.errors[answer.error.name] = self.stats.errors.get(answer.error.name, 0) + 1
        if answer.error in RETRIABLE:
            batch.request_id = -1  # the timeout of this attempt does nothing now
            self.world.scheduler.after(RETRY_BACKOFF_MS, self._retry, batch.partition, -1)
            return self.id, "produce-retry", f"{self.topic}-{batch.partition}: {answer.error.name}"
        del self.in_flight[batch.partition]  # e.g. OUT_OF_ORDER_SEQUENCE_NUMBER: the producer gives the batch up
        self.stats.gave_up += 1
        return self.id, "produce-failed", f"{self.topic}-{batch.partition}: {answer.error.name}"


class RecordDeleter:
    """Kafka's kafka-delete-records.sh at drawn times: the log start of a partition moved below its acknowledged
    records. The data checker learns of each request when it is sent: it may take effect without an answer."""

    def __init__(self, world: World, topic: str, partitions: int) -> None:
        self.world, self.topic, self.partitions = world, topic, partitions
        self.rng = world.stream("delete-records")
        self.request_id = 0
        self.pending: dict[int, tuple[int, int]] = {}  # request id -> (partition, offset)
        self.done: list[tuple[int, int, ErrorCode]] = []
        world.endpoints[DELETE_ADMIN] = self

    def delete(self, world: World, partition: int) -> Any:
        offset = world.data_checker.deletable_offset(self.topic, partition)  # type: ignore[attr-defined]
        leader = leader_of(world, self.rng, self.topic, partition)
        if offset is None or leader is None:
            return None, "delete-records", f"{self.topic}-{partition}: nothing to delete"
        self.request_id += 1
        self.pending[self.request_id] = (partition, offset)
        world.data_checker.on_deleted(self.topic, partition, offset)  # type: ignore[attr-defined]
        world.send(DELETE_ADMIN, leader, DeleteRecordsRequest(self.request_id, self.topic, partition, offset),
                   "DeleteRecords")
        return None, "delete-records", f"{self.topic}-{partition} below {offset} -> {leader}"

    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope) or not isinstance(envelope.payload, DeleteRecordsResponse):
            return None
        answer = envelope.payload
        found = self.pending.pop(answer.request_id, None)
        if found is None:
            return None
        partition, offset = found
        self.done.append((partition, offset, answer.error))
        return None, "records-deleted", f"{self.topic}-{partition} below {offset}: {answer.error.name}"
