"""A COMMIT/ABORT marker appended on a partition leader (WriteTxnMarkers, Kafka's ReplicaManager.appendRecords with
origin COORDINATOR): one decision shared by the node (node/apis/txn_markers_api.py) and the simulator
(sim/hosts/txn_markers.py).

NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION where this broker does not lead the partition; the producer
state's epoch and coordinator-epoch checks; NOT_ENOUGH_REPLICAS below min.insync.replicas; otherwise the control
batch goes into the leader's log and `appended()` starts its acks=all wait. What the producer state and the
transaction index learn from the marker differs between the two (the node keeps a `.txnindex` on disk, the
simulator derives it from the log), so the caller passes it as `on_appended`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pykraft.broker.partition_host import AppendResult, PartitionCore, Replica
from pykraft.broker.partition_state import admit_produce
from pykraft.broker.produce_rules import assign_offsets
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError
from pykraft.records.txn_markers import encode_txn_marker_batch

# (the leader's replica, the offset of the control batch just appended): the caller's bookkeeping.
MarkerAppended = Callable[[Replica, int], None]


class Marker(Protocol):
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def coordinator_epoch(self) -> int: ...
    @property
    def commit(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class MarkerRequest:
    """One marker of a WriteTxnMarkers request (or of the coordinator's own append): its partitions."""
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]


def append_marker(host: PartitionCore, topic: str, partition: int, marker: Marker, now_ms: int,
                  on_appended: MarkerAppended) -> AppendResult:
    found = host.leader_replica(topic, partition)
    if isinstance(found, ErrorCode):
        return AppendResult(found)
    replica, log, leading = found, found.log, found.leading
    assert leading is not None
    error = replica.producers.check_marker(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch)
    if error is ErrorCode.NONE:
        error = admit_produce(-1, host.isr_size(replica), replica.settings.min_insync_replicas)
    if error is not ErrorCode.NONE:
        return AppendResult(error)
    batch = bytearray(encode_txn_marker_batch(marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                              marker.commit, timestamp_ms=now_ms))
    base = log.end_offset()
    assign_offsets(batch, base, replica.leader_epoch)
    try:
        log.append_as_leader(batch, replica.leader_epoch, keep=len(leading.replicas) > 1)
    except InvalidAppendError as exc:  # a bug: the batch was built here
        return AppendResult(ErrorCode.UNKNOWN_SERVER_ERROR, message=str(exc))
    on_appended(replica, base)
    return host.appended(replica, base, base, -1)
