"""Transactions on the simulated brokers' partition logs, as the node's host does them (node/apis/txn_markers_api.py,
node/hosts/producer_recovery.py) over the same pure parts:

- `observe_batch`: a batch in the log (a follower's append, or the rebuild of a log opened or truncated): its
  sequences and transaction, and for a COMMIT/ABORT marker the producer's transaction there ends;
- `append_marker`: WriteTxnMarkers on the leader for one partition (the producer state's epoch and coordinator
  epoch checks, min.insync.replicas, the control batch, then `appended()`: acks=all);
- `MarkerRequest`/`MarkerResponse`: the message of the marker writer (the transactional workload's coordinator).
The aborted-transaction index is derived from the log (partition_logs.DerivedTxnIndex).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykraft.broker import txn_marker_append
from pykraft.broker.partition_host import AppendResult, PartitionCore, Replica
from pykraft.protocol.errors import ErrorCode
from pykraft.records.txn_markers import decode_txn_marker, is_txn_marker_batch


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    request_id: int
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool


@dataclass(frozen=True, slots=True)
class MarkerResponse:
    request_id: int
    error: ErrorCode
    offset: int = -1


def observe_batch(replica: Replica, batch: Any) -> None:
    producers = replica.producers
    if not is_txn_marker_batch(batch):
        producers.observe_batch(batch)
        return
    marker = decode_txn_marker(batch)
    replica.verifying.pop(batch.producer_id, None)
    producers.observe_marker(batch.producer_id, batch.producer_epoch, marker.coordinator_epoch, batch.base_offset,
                             marker.commit, batch.max_timestamp)


def append_marker(host: PartitionCore, request: MarkerRequest, now_ms: int) -> AppendResult:
    def bookkeeping(replica: Replica, base: int) -> None:  # the simulator derives the aborted index from the log
        replica.verifying.pop(request.producer_id, None)
        replica.producers.observe_marker(request.producer_id, request.producer_epoch, request.coordinator_epoch, base,
                                         request.commit, now_ms)
    return txn_marker_append.append_marker(host, request.topic, request.partition, request, now_ms, bookkeeping)
