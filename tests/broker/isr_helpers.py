"""A leader broker (id 1) with a metadata cache and an IsrManager, and builders for controller answers."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.alter_partition.v3 import response as ap_resp
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from pykraft.broker.actions import Ready, SendToController
from pykraft.broker.isr_manager import ALTER_PARTITION, IsrManager, IsrManagerConfig
from pykraft.broker.isr_rules import FollowerProgress, LeaderProgress
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.protocol.errors import ErrorCode

from .records import TOPIC_ID, isr_change, partition, register, topic

ME = 1
EPOCHS = {1: 10, 2: 20, 3: 30}
LAG = 30_000
ZERO = datetime.timedelta(0)


def tp(partition_id: int = 0, topic_id: uuid.UUID = TOPIC_ID) -> tuple[uuid.UUID, int]:
    return (topic_id, partition_id)


def sent_isrs(send: SendToController) -> dict[tuple[uuid.UUID, int], tuple[int, ...]]:
    return {(t.topic_id, int(p.partition_index)): tuple(int(b.broker_id) for b in p.new_isr_with_epochs)
            for t in send.request.topics for p in t.partitions}


def answer(send: SendToController, errors: dict[tuple[uuid.UUID, int], ErrorCode] | None = None,
           top: ErrorCode = ErrorCode.NONE) -> ap_resp.AlterPartitionResponse:
    """The controller's answer: each partition at the next partition epoch with the ISR asked for, unless
    `errors` names an error for it."""
    errors = errors or {}
    topics = []
    for t in send.request.topics:
        parts = []
        for p in t.partitions:
            error = errors.get((t.topic_id, int(p.partition_index)), ErrorCode.NONE)
            ok = error is ErrorCode.NONE
            parts.append(ap_resp.PartitionData(
                partition_index=p.partition_index, error_code=error, leader_id=BrokerId(ME if ok else 0),
                leader_epoch=p.leader_epoch if ok else i32(0),
                isr=tuple(BrokerId(int(b.broker_id)) for b in p.new_isr_with_epochs) if ok else (),
                leader_recovery_state=i8(0), partition_epoch=i32(int(p.partition_epoch) + 1 if ok else 0)))
        topics.append(ap_resp.TopicData(topic_id=t.topic_id, partitions=tuple(parts)))
    return ap_resp.AlterPartitionResponse(throttle_time=ZERO, error_code=top, topics=tuple(topics))


class Leader:
    def __init__(self, partitions: int = 1, replicas: list[int] | None = None, isr: list[int] | None = None,
                 now: int = 1000, **config: Any) -> None:
        self.cache = MetadataCache()
        self.offset = 0
        replicas = replicas or [1, 2, 3]
        self.apply(*(register(b, e) for b, e in EPOCHS.items()), topic(),
                   *(partition(i, replicas, isr or replicas, leader=ME) for i in range(partitions)))
        self.manager = IsrManager(IsrManagerConfig(ME, replica_lag_time_max_ms=LAG, **config), self.cache)
        self.now = now
        self.ready = self.manager.sync_metadata(now)

    def apply(self, *records: Any) -> None:
        for record in records:
            self.cache.replay(record, self.offset)
            self.offset += 1

    def commit_isr(self, partition_id: int, isr: list[int], leader: int | None = None) -> Ready:
        """The controller's change reaches this broker through the metadata log."""
        self.apply(isr_change(partition_id, isr, leader=leader))
        return self.sync()

    def sync(self) -> Ready:
        self.ready = self.manager.sync_metadata(self.now)
        return self.ready

    def progress(self, leo: int, followers: dict[int, tuple[int, int]], partitions: list[int] | None = None,
                 start_offset: int = 0, epochs: dict[int, int] | None = None) -> Ready:
        """followers: replica -> (log end offset, last caught up ms)."""
        epochs = EPOCHS if epochs is None else epochs
        update = {}
        for pid in partitions if partitions is not None else [0]:
            leader_epoch = self.cache.partition(TOPIC_ID, pid).leader_epoch
            update[tp(pid)] = LeaderProgress(leader_epoch, leo, start_offset, tuple(
                FollowerProgress(r, end, caught, epochs.get(r, -1)) for r, (end, caught) in followers.items()))
        self.ready = self.manager.update_progress(update, self.now)
        return self.ready

    def poll(self, now: int) -> Ready:
        self.now = now
        self.ready = self.manager.poll(now)
        return self.ready

    def respond(self, send: SendToController, response: Any) -> Ready:
        self.ready = self.manager.handle_response(send.request_id, response, self.now)
        return self.ready


def one_send(ready: Ready) -> SendToController:
    sends = ready.sends
    assert len(sends) == 1, ready
    assert sends[0].api_key == ALTER_PARTITION
    return sends[0]
