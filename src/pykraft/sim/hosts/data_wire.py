"""Data-plane messages of the simulated cluster: between brokers (a follower's Fetch and its answer) and from the
data workload's clients (Produce, a consumer's Fetch, DeleteRecords).

The partition parts of a Fetch are broker/fetch_answers.py's `PartitionFetch` and `PartitionAnswer` as they are
(the node builds and parses the Kafka wire messages from the same values); topics are named, not numbered.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.broker.fetch_answers import PartitionAnswer, PartitionFetch
from pykraft.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class FetchRequest:
    request_id: int
    replica_id: int  # -1: a consumer
    broker_epoch: int
    partitions: tuple[tuple[str, PartitionFetch], ...]


@dataclass(frozen=True, slots=True)
class FetchResponse:
    request_id: int
    partitions: tuple[tuple[str, PartitionAnswer], ...]


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    request_id: int
    topic: str
    partition: int
    records: bytes
    acks: int


@dataclass(frozen=True, slots=True)
class ProduceResponse:
    request_id: int
    error: ErrorCode
    base_offset: int = -1


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    request_id: int
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class DeleteRecordsResponse:
    request_id: int
    error: ErrorCode
    low_watermark: int = -1
