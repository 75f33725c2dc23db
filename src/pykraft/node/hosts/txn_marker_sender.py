"""The coordinator's side of WriteTxnMarkers (Kafka's TransactionMarkerChannelManager), retried until written.

Once a transaction's PrepareCommit/PrepareAbort is in the log, each of its partitions' leaders must write the
marker. `send` starts one delivery per transaction: the partitions are grouped by their current leader (the
metadata cache), each leader gets one WriteTxnMarkers v1 on the inter-broker listener (or the local append when the
leader is this broker), and each partition's outcome goes to the coordinator (`marker_result`). Partitions whose
leader is unknown or that answer a retriable error are tried again after a backoff (100 ms, doubling to 1 s)
against whoever leads them then; a partition whose topic was deleted needs no marker. The last marker written
hands the CompleteCommit/CompleteAbort write back to the host. A delivery stops when its coordinator is unloaded
(the partition's new leader sends the markers again after loading).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.types import ProducerId, TopicName
from kio.static.primitive import i16, i32

from pykraft.protocol.lazy_schema import schema_module
from pykraft.broker.txn_coordinator import MarkerSend, TxnCoordinator, TxnWrite
from pykraft.protocol.errors import ErrorCode

from pykraft.broker.txn_marker_append import MarkerRequest

wtm = schema_module("kio.schema.write_txn_markers.v1.request")  # loaded at the first marker sent (issue 34)

if TYPE_CHECKING:
    from pykraft.broker.metadata_cache import MetadataCache

_log = logging.getLogger("pykraft.node.txn_markers")
BACKOFF_S, MAX_BACKOFF_S = 0.1, 1.0
Partition = tuple[str, int]
LocalAppend = Callable[[list[MarkerRequest]], Awaitable[list[dict[Partition, ErrorCode]]]]


class MarkerSender:
    def __init__(self, broker_id: int, cache: MetadataCache, local_append: LocalAppend,
                 send: Callable[[str, int, Any], Awaitable[Any | None]],
                 address_of: Callable[[int], tuple[str, int] | None]) -> None:
        self.broker_id = broker_id
        self.cache = cache
        self._local_append = local_append
        self._send = send
        self._address_of = address_of
        self.is_current: Callable[[TxnCoordinator], bool] = lambda _c: True
        self.on_complete: Callable[[TxnCoordinator, TxnWrite], None] = lambda _c, _w: None
        self._tasks: set[asyncio.Task[None]] = set()

    def send(self, coordinator: TxnCoordinator, marker: MarkerSend) -> None:
        task = asyncio.get_running_loop().create_task(self._deliver(coordinator, marker))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("a transaction marker delivery failed: %r", task.exception())

    async def _deliver(self, coordinator: TxnCoordinator, marker: MarkerSend) -> None:
        remaining = set(marker.partitions)
        backoff = BACKOFF_S
        while remaining and self.is_current(coordinator):
            by_leader: dict[int, list[Partition]] = {}
            outcomes: dict[Partition, ErrorCode] = {}
            for tp in sorted(remaining):
                leader = self._leader_of(tp)
                if leader is None:
                    outcomes[tp] = ErrorCode.NONE  # the topic is gone: nothing to mark
                elif leader >= 0:
                    by_leader.setdefault(leader, []).append(tp)
            answers = await asyncio.gather(*(self._send_to(leader, marker, tps) for leader, tps in by_leader.items()))
            for answer in answers:
                outcomes.update(answer)
            if not self.is_current(coordinator):
                return
            for tp, error in outcomes.items():
                outcome = coordinator.marker_result(marker.transactional_id, tp, error)
                if outcome is True:
                    continue
                remaining.discard(tp)
                if isinstance(outcome, TxnWrite):
                    self.on_complete(coordinator, outcome)
            if remaining:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _leader_of(self, tp: Partition) -> int | None:
        """The partition's leader id, -1 when it has none now, None when the topic (or partition) is gone."""
        topic_id = self.cache.topic_id(tp[0])
        partition = None if topic_id is None else self.cache.partition(topic_id, tp[1])
        return None if partition is None else partition.leader

    async def _send_to(self, leader: int, marker: MarkerSend, partitions: list[Partition]) -> dict[Partition, ErrorCode]:
        request = MarkerRequest(marker.producer_id, marker.producer_epoch, marker.commit, marker.coordinator_epoch,
                                tuple(partitions))
        if leader == self.broker_id:
            return (await self._local_append([request]))[0]
        address = self._address_of(leader)
        answer = None if address is None else await self._send(address[0], address[1], _wire_request(request))
        if answer is None:
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in partitions}  # unreachable: try again later
        found = {(str(t.name), int(p.partition_index)): ErrorCode(int(p.error_code))
                 for m in answer.markers for t in m.topics for p in t.partitions}
        return {tp: found.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in partitions}

    def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def _wire_request(request: MarkerRequest) -> Any:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in request.partitions:
        by_topic.setdefault(topic, []).append(partition)
    return wtm.WriteTxnMarkersRequest(markers=(wtm.WritableTxnMarker(
        producer_id=ProducerId(request.producer_id), producer_epoch=i16(request.producer_epoch),
        transaction_result=request.commit, coordinator_epoch=i32(request.coordinator_epoch), topics=tuple(
            wtm.WritableTxnMarkerTopic(name=TopicName(topic), partition_indexes=tuple(i32(i) for i in ids))
            for topic, ids in by_topic.items())),))
