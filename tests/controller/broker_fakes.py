"""Shared pieces for the broker-side controller tests: request builders, a partition side that records what it was
asked (and with which eligibility view), and a harness that replays results the way the runtime will."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4 import request as reg_v4
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i64, u16

from pykraft.controller.broker_lifecycle import BrokerLifecycle
from pykraft.controller.cluster import RECORD_TYPES, ClusterControl
from pykraft.controller.eligibility import BrokerEligibility
from pykraft.controller.features import FeatureControl
from pykraft.controller.heartbeats import HeartbeatManager
from pykraft.controller.result import ControllerResult
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
SESSION_MS = 9000
MV = 27


def incarnation(n: int) -> uuid.UUID:
    return uuid.UUID(int=(n << 64) | 0xABC)


def log_dir(n: int) -> uuid.UUID:
    return uuid.UUID(int=(7 << 96) | n)


def registration_request(broker_id: int, inc: int = 1, *, cluster_id: str = CLUSTER_ID,
                         mv_range: tuple[int, int] = (7, MV), extra_features: tuple[tuple[str, int, int], ...] = (),
                         log_dirs: tuple[uuid.UUID | None, ...] | None = None, rack: str | None = None,
                         port: int = 9092) -> reg_v4.BrokerRegistrationRequest:
    features = [("metadata.version", *mv_range), *extra_features]
    return reg_v4.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id), cluster_id=cluster_id, incarnation_id=incarnation(inc),
        listeners=(reg_v4.Listener(name="PLAINTEXT", host="localhost", port=u16(port), security_protocol=i16(0)),),
        features=tuple(reg_v4.Feature(name=n, min_supported_version=i16(lo), max_supported_version=i16(hi))
                       for n, lo, hi in features),
        rack=rack, log_dirs=(log_dir(broker_id),) if log_dirs is None else log_dirs)


def heartbeat_request(broker_id: int, epoch: int, offset: int, *, want_fence: bool = False,
                      want_shut_down: bool = False) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch),
                                  current_metadata_offset=i64(offset), want_fence=want_fence,
                                  want_shut_down=want_shut_down)


@dataclass(frozen=True)
class FakePartitionChange:
    """Stands in for a PartitionChangeRecord: `kind` names the side effect that produced it."""

    __api_key__: ClassVar[int] = 5
    kind: str
    broker_id: int


@dataclass
class FakePartitions:
    """Partition side: `led` is how many partitions each broker leads; fence/shutdown/unregister moves them away.
    `views` records (kind, broker, is_active(broker) in the view it was handed)."""

    led: dict[int, int] = field(default_factory=dict)
    views: list[tuple[str, int, bool]] = field(default_factory=list)
    replayed: list[FakePartitionChange] = field(default_factory=list)

    def partitions_led_by(self, broker_id: int) -> int:
        return self.led.get(broker_id, 0)

    def _records(self, kind: str, broker_id: int, brokers: BrokerEligibility) -> list[Any]:
        self.views.append((kind, broker_id, brokers.is_active(broker_id)))
        return [FakePartitionChange(kind, broker_id)]

    def records_for_fence(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]:
        return self._records("fence", broker_id, brokers)

    def records_for_controlled_shutdown(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]:
        return self._records("shutdown", broker_id, brokers)

    def records_for_unfence(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]:
        return self._records("unfence", broker_id, brokers)

    def records_for_unregister(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]:
        return self._records("unregister", broker_id, brokers)

    def replay(self, record: FakePartitionChange) -> None:
        self.replayed.append(record)
        if record.kind in ("fence", "shutdown", "unregister"):
            self.led[record.broker_id] = 0


class Harness:
    """A BrokerLifecycle over a FakePartitions; `apply` appends and replays a result like the runtime does."""

    def __init__(self, *, first_offset: int = 100, mv: int | None = MV) -> None:
        self.cluster = ClusterControl()
        self.heartbeats = HeartbeatManager(SESSION_MS)
        self.features = FeatureControl(node_id=3000)
        if mv is not None:
            self.features.replay(FeatureLevelRecordV0(name="metadata.version", feature_level=i16(mv)))
        self.partitions = FakePartitions()
        self.lifecycle = BrokerLifecycle(CLUSTER_ID, self.cluster, self.heartbeats, self.features, self.partitions)
        self.next_offset = first_offset
        self.log: list[tuple[int, Any]] = []

    def apply(self, result: ControllerResult) -> ControllerResult:
        for record in result.records:
            if record.__api_key__ in RECORD_TYPES:
                self.cluster.replay(record, self.next_offset)
            else:
                self.partitions.replay(record)
            self.log.append((self.next_offset, record))
            self.next_offset += 1
        return result

    def register(self, broker_id: int, inc: int = 1, now_ms: int = 0, **kwargs: Any) -> Any:
        request = registration_request(broker_id, inc, **kwargs)
        return self.apply(self.lifecycle.handle_registration(request, now_ms, self.next_offset)).response

    def heartbeat(self, broker_id: int, offset: int | None = None, now_ms: int = 0, **kwargs: Any) -> Any:
        registration = self.cluster.registration(broker_id)
        epoch = kwargs.pop("epoch", registration.epoch if registration is not None else -1)
        request = heartbeat_request(broker_id, epoch, self.next_offset if offset is None else offset, **kwargs)
        return self.apply(self.lifecycle.handle_heartbeat(request, now_ms, self.next_offset)).response

    def unfenced_broker(self, broker_id: int, inc: int = 1, now_ms: int = 0) -> None:
        """Register and heartbeat once caught up: an active broker."""
        self.register(broker_id, inc, now_ms)
        self.heartbeat(broker_id, now_ms=now_ms)
        assert self.cluster.is_active(broker_id)

    def records_since(self, offset: int) -> list[Any]:
        return [record for at, record in self.log if at >= offset]
