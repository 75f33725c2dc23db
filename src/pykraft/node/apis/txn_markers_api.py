"""WriteTxnMarkers (v1) on a partition leader: the transaction coordinator's COMMIT/ABORT markers.

For each marker and partition (Kafka's ReplicaManager.appendRecords with origin COORDINATOR): NOT_LEADER_OR_FOLLOWER
/ UNKNOWN_TOPIC_OR_PARTITION where this broker does not lead it; INVALID_PRODUCER_EPOCH for a marker of an older
producer epoch than the partition has seen, TRANSACTION_COORDINATOR_FENCED for one of an older coordinator epoch;
NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas; otherwise the control batch is appended (the
producer's transaction there is over; an aborted one goes into the `.txnindex`) and the answer waits until the
high watermark passed it (acks=all), REQUEST_TIMED_OUT after `MARKER_TIMEOUT_S`. A marker completed in a
`__consumer_offsets` partition commits or drops the group's pending transactional offsets (`on_offsets_marker`).
`append_markers` is the same without the wire: the coordinator calls it when it leads the partition itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from pykraft.broker import txn_marker_append
from pykraft.broker.partition_host import Replica
from pykraft.broker.txn_marker_append import MarkerRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

from pykraft.node.hosts.partitions import AppendResult, PartitionHost
from pykraft.node.hosts.producer_recovery import record_marker
from pykraft.node.apis.wire_build import make, response_namespace

MARKER_TIMEOUT_S = 30.0  # request.timeout.ms
OFFSETS_TOPIC = "__consumer_offsets"
OffsetsMarkerHook = Callable[[int, int, bool], None]  # (__consumer_offsets partition, producer id, commit)


def append_marker(host: PartitionHost, topic: str, partition: int, marker: MarkerRequest,
                  now_ms: int) -> AppendResult:
    def bookkeeping(replica: Replica, base: int) -> None:  # the producer state and the `.txnindex` on disk
        record_marker(replica, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, base,
                      marker.commit, now_ms, replica.log.active_segment_base())
    return txn_marker_append.append_marker(host, topic, partition, marker, now_ms, bookkeeping)


async def append_markers(host: PartitionHost, markers: Iterable[MarkerRequest], now_ms: int,
                         on_offsets_marker: OffsetsMarkerHook | None) -> list[dict[tuple[str, int], ErrorCode]]:
    """Append every marker, wait for acks=all; per marker, each partition's error."""
    started = [[(tp, append_marker(host, tp[0], tp[1], m, now_ms)) for tp in m.partitions] for m in markers]
    waiters = [r.waiter for parts in started for _, r in parts if r.waiter is not None and not r.waiter.done()]
    if waiters:
        await asyncio.wait(waiters, timeout=MARKER_TIMEOUT_S)
    outcomes = []
    for marker, parts in zip(markers, started):
        errors = {}
        for tp, result in parts:
            error = result.error
            if error is ErrorCode.NONE and result.waiter is not None:
                error = result.waiter.result() if result.waiter.done() else ErrorCode.REQUEST_TIMED_OUT
            if error is ErrorCode.NONE and tp[0] == OFFSETS_TOPIC and on_offsets_marker is not None:
                on_offsets_marker(tp[1], marker.producer_id, marker.commit)
            errors[tp] = error
        outcomes.append(errors)
    return outcomes


def markers_of(message: Any) -> list[MarkerRequest]:
    return [MarkerRequest(int(m.producer_id), int(m.producer_epoch), bool(m.transaction_result),
                          int(m.coordinator_epoch),
                          tuple((str(t.name), int(p)) for t in m.topics for p in t.partition_indexes))
            for m in message.markers]


async def handle(host: PartitionHost, message: Any, now_ms: int, on_offsets_marker: OffsetsMarkerHook | None) -> Any:
    ns = response_namespace(ApiKey.WRITE_TXN_MARKERS, int(message.__version__))
    markers = markers_of(message)
    outcomes = await append_markers(host, markers, now_ms, on_offsets_marker)
    results = []
    for marker, errors in zip(markers, outcomes):
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), error in errors.items():
            by_topic.setdefault(topic, []).append(make(ns.WritableTxnMarkerPartitionResult, partition_index=partition,
                                                       error_code=error))
        results.append(make(ns.WritableTxnMarkerResult, producer_id=marker.producer_id, topics=tuple(
            make(ns.WritableTxnMarkerTopicResult, name=name, partitions=tuple(parts))
            for name, parts in by_topic.items())))
    return make(ns.WriteTxnMarkersResponse, markers=tuple(results))
