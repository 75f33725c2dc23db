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

from pykraft.broker.partition_host import AppendResult, PartitionCore, Replica
from pykraft.broker.partition_state import admit_produce
from pykraft.broker.produce_rules import assign_offsets
from pykraft.broker.producer_state import last_sequence
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError
from pykraft.records.txn_markers import decode_txn_marker, encode_txn_marker_batch, is_txn_marker_batch


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
        producers.observe(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                          last_sequence(batch.base_sequence, batch.last_offset_delta), batch.base_offset,
                          batch.last_offset, batch.max_timestamp, transactional=batch.is_transactional)
        return
    marker = decode_txn_marker(batch)
    replica.verifying.pop(batch.producer_id, None)
    producers.observe_marker(batch.producer_id, batch.producer_epoch, marker.coordinator_epoch, batch.base_offset,
                             marker.commit, batch.max_timestamp)


def append_marker(host: PartitionCore, request: MarkerRequest, now_ms: int) -> AppendResult:
    found = host.leader_replica(request.topic, request.partition)
    if isinstance(found, ErrorCode):
        return AppendResult(found)
    replica, log, leading = found, found.log, found.leading
    assert leading is not None
    error = replica.producers.check_marker(request.producer_id, request.producer_epoch, request.coordinator_epoch)
    if error is ErrorCode.NONE:
        error = admit_produce(-1, host.isr_size(replica), replica.settings.min_insync_replicas)
    if error is not ErrorCode.NONE:
        return AppendResult(error)
    batch = bytearray(encode_txn_marker_batch(request.producer_id, request.producer_epoch, request.coordinator_epoch,
                                              request.commit, timestamp_ms=now_ms))
    base = log.end_offset()
    assign_offsets(batch, base, replica.leader_epoch)
    try:
        log.append_as_leader(batch, replica.leader_epoch, keep=len(leading.replicas) > 1)
    except InvalidAppendError as exc:  # a bug: the batch was built here
        return AppendResult(ErrorCode.UNKNOWN_SERVER_ERROR, message=str(exc))
    replica.verifying.pop(request.producer_id, None)
    replica.producers.observe_marker(request.producer_id, request.producer_epoch, request.coordinator_epoch, base,
                                     request.commit, now_ms)
    return host.appended(replica, base, base, -1)
