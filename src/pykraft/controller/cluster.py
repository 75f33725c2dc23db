"""Broker and controller registrations, rebuilt by replaying the metadata log (Kafka's ClusterControlManager image).

Every controller replica replays the same committed records, so this image is identical on all of them. It
implements `BrokerEligibility` for the partition side. The active controller's soft state (session clocks) lives
in heartbeats.py, not here.

Replay accepts every version of the records (RegisterBrokerRecord v0-v3, BrokerRegistrationChangeRecord v0-v2) by
reading fields that older versions lack with `getattr` defaults. A record that names an unknown broker or the wrong
broker epoch changes nothing and raises `ReplayError` (the controller counts it as a metadata error), because a
log that reached us that way cannot be repaired here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32, i64, u16

from pykraft.records.metadata.schema.register_broker_record import (
    BrokerEndpointV3,
    BrokerFeatureV3,
    RegisterBrokerRecordV3,
)
from pykraft.records.metadata.schema.register_controller_record import (
    ControllerEndpointV0,
    ControllerFeatureV0,
    RegisterControllerRecordV0,
)

from .eligibility import BrokerEligibility

REGISTER_BROKER = 0
UNREGISTER_BROKER = 1
FENCE_BROKER = 7
UNFENCE_BROKER = 8
BROKER_REGISTRATION_CHANGE = 17
REGISTER_CONTROLLER = 27
RECORD_TYPES = frozenset({REGISTER_BROKER, UNREGISTER_BROKER, FENCE_BROKER, UNFENCE_BROKER,
                          BROKER_REGISTRATION_CHANGE, REGISTER_CONTROLLER})

# BrokerRegistrationChangeRecord.Fenced and .InControlledShutdown values (Kafka's BrokerRegistrationFencingChange
# and BrokerRegistrationInControlledShutdownChange).
FENCE = 1
UNFENCE = -1
NO_CHANGE = 0
IN_CONTROLLED_SHUTDOWN = 1


class ReplayError(Exception):
    """A committed record that does not apply to the image (unknown broker, wrong epoch, bad enum value)."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class FeatureRange:
    min_version: int
    max_version: int

    def contains(self, level: int) -> bool:
        return self.min_version <= level <= self.max_version


def features_of(items: Iterable[Any]) -> tuple[tuple[str, FeatureRange], ...]:
    """Kafka feature lists (request or record elements) as a hashable (name, range) tuple sorted by name. A name
    listed twice (a peer's mistake) keeps its first range, as a lookup in Kafka's keyed collection would."""
    ranges: dict[str, FeatureRange] = {}
    for f in items:
        ranges.setdefault(f.name, FeatureRange(int(f.min_supported_version), int(f.max_supported_version)))
    return tuple(sorted(ranges.items(), key=lambda item: item[0]))


def endpoints_of(items: Iterable[Any]) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e.name, e.host, int(e.port), int(e.security_protocol)) for e in items)


def supported_range(features: tuple[tuple[str, FeatureRange], ...], name: str) -> FeatureRange | None:
    for feature_name, feature_range in features:
        if feature_name == name:
            return feature_range
    return None


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID | None
    listeners: tuple[Endpoint, ...]
    features: tuple[tuple[str, FeatureRange], ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: tuple[uuid.UUID | None, ...] = ()
    is_migrating_zk_broker: bool = False

    def supported(self, feature: str) -> FeatureRange | None:
        return supported_range(self.features, feature)

    def to_record(self) -> RegisterBrokerRecordV3:
        return RegisterBrokerRecordV3(
            broker_id=BrokerId(self.broker_id), is_migrating_zk_broker=self.is_migrating_zk_broker,
            incarnation_id=self.incarnation_id, broker_epoch=i64(self.epoch),
            end_points=tuple(BrokerEndpointV3(name=e.name, host=e.host, port=u16(e.port),
                                              security_protocol=i16(e.security_protocol)) for e in self.listeners),
            features=tuple(BrokerFeatureV3(name=n, min_supported_version=i16(r.min_version),
                                           max_supported_version=i16(r.max_version)) for n, r in self.features),
            rack=self.rack, fenced=self.fenced, in_controlled_shutdown=self.in_controlled_shutdown,
            log_dirs=self.log_dirs)


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    controller_id: int
    incarnation_id: uuid.UUID | None
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...]
    features: tuple[tuple[str, FeatureRange], ...]

    def supported(self, feature: str) -> FeatureRange | None:
        return supported_range(self.features, feature)

    def to_record(self) -> RegisterControllerRecordV0:
        return RegisterControllerRecordV0(
            controller_id=i32(self.controller_id), incarnation_id=self.incarnation_id,
            zk_migration_ready=self.zk_migration_ready,
            end_points=tuple(ControllerEndpointV0(name=e.name, host=e.host, port=u16(e.port),
                                                  security_protocol=i16(e.security_protocol))
                             for e in self.listeners),
            features=tuple(ControllerFeatureV0(name=n, min_supported_version=i16(r.min_version),
                                               max_supported_version=i16(r.max_version))
                           for n, r in self.features))


class ClusterControl:
    """The registrations image. `brokers` and `controllers` are the whole image (two equal images compare equal
    through `image()`); `registration_offsets` remembers where each broker's RegisterBrokerRecord was replayed,
    which a fenced broker must reach before it may be unfenced."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerRegistration] = {}
        self.controllers: dict[int, ControllerRegistration] = {}
        self.registration_offsets: dict[int, int] = {}

    # ---- replay ----------------------------------------------------------------------------------------------
    def replay(self, record: Any, offset: int) -> None:
        key = record.__api_key__
        if key == REGISTER_BROKER:
            self._replay_register(record, offset)
        elif key == UNREGISTER_BROKER:
            self._registered(int(record.broker_id), int(record.broker_epoch))
            del self.brokers[int(record.broker_id)]
            self.registration_offsets.pop(int(record.broker_id), None)
        elif key == BROKER_REGISTRATION_CHANGE:
            self._replay_change(record)
        elif key in (FENCE_BROKER, UNFENCE_BROKER):
            current = self._registered(int(record.id), int(record.epoch))
            self.brokers[current.broker_id] = replace(current, fenced=key == FENCE_BROKER)
        elif key == REGISTER_CONTROLLER:
            self.controllers[int(record.controller_id)] = ControllerRegistration(
                int(record.controller_id), record.incarnation_id, bool(record.zk_migration_ready),
                endpoints_of(record.end_points), features_of(record.features))
        else:
            raise ReplayError(f"ClusterControl cannot replay {type(record).__name__}")

    def _replay_register(self, record: Any, offset: int) -> None:
        broker_id = int(record.broker_id)
        self.brokers[broker_id] = BrokerRegistration(
            broker_id=broker_id, epoch=int(record.broker_epoch), incarnation_id=record.incarnation_id,
            listeners=endpoints_of(record.end_points), features=features_of(record.features), rack=record.rack,
            fenced=bool(record.fenced), in_controlled_shutdown=bool(getattr(record, "in_controlled_shutdown", False)),
            log_dirs=tuple(getattr(record, "log_dirs", ())),
            is_migrating_zk_broker=bool(getattr(record, "is_migrating_zk_broker", False)))
        self.registration_offsets[broker_id] = offset

    def _replay_change(self, record: Any) -> None:
        current = self._registered(int(record.broker_id), int(record.broker_epoch))
        fenced_change = int(record.fenced)
        shutdown_change = int(getattr(record, "in_controlled_shutdown", NO_CHANGE))
        if fenced_change not in (FENCE, UNFENCE, NO_CHANGE):
            raise ReplayError(f"BrokerRegistrationChangeRecord with Fenced={fenced_change}")
        if shutdown_change not in (NO_CHANGE, IN_CONTROLLED_SHUTDOWN):
            raise ReplayError(f"BrokerRegistrationChangeRecord with InControlledShutdown={shutdown_change}")
        fenced = current.fenced if fenced_change == NO_CHANGE else fenced_change == FENCE
        # KIP-841: only a registration with a new incarnation leaves controlled shutdown, never a change record.
        in_shutdown = current.in_controlled_shutdown or shutdown_change == IN_CONTROLLED_SHUTDOWN
        log_dirs = tuple(getattr(record, "log_dirs", ())) or current.log_dirs
        self.brokers[current.broker_id] = replace(current, fenced=fenced, in_controlled_shutdown=in_shutdown,
                                                  log_dirs=log_dirs)

    def _registered(self, broker_id: int, epoch: int) -> BrokerRegistration:
        current = self.brokers.get(broker_id)
        if current is None:
            raise ReplayError(f"no registration for broker {broker_id}")
        if current.epoch != epoch:
            raise ReplayError(f"broker {broker_id} is registered with epoch {current.epoch}, record has {epoch}")
        return current

    # ---- snapshot ----------------------------------------------------------------------------------------------
    def snapshot_records(self) -> Iterator[Any]:
        for broker_id in sorted(self.brokers):
            yield self.brokers[broker_id].to_record()
        for controller_id in sorted(self.controllers):
            yield self.controllers[controller_id].to_record()

    def image(self) -> tuple[dict[int, BrokerRegistration], dict[int, ControllerRegistration]]:
        return dict(self.brokers), dict(self.controllers)

    # ---- queries -----------------------------------------------------------------------------------------------
    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def registration_offset(self, broker_id: int) -> int:
        return self.registration_offsets.get(broker_id, 0)

    def fenced_broker_count(self) -> int:
        return sum(1 for b in self.brokers.values() if b.fenced)

    def active_broker_count(self) -> int:
        return sum(1 for b in self.brokers.values() if not b.fenced)

    # ---- BrokerEligibility -------------------------------------------------------------------------------------
    def is_registered(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def broker_epoch(self, broker_id: int) -> int | None:
        registration = self.brokers.get(broker_id)
        return None if registration is None else registration.epoch

    def is_fenced(self, broker_id: int) -> bool:
        registration = self.brokers.get(broker_id)
        return registration is None or registration.fenced

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        registration = self.brokers.get(broker_id)
        return registration is not None and registration.in_controlled_shutdown

    def is_active(self, broker_id: int) -> bool:
        registration = self.brokers.get(broker_id)
        return registration is not None and not registration.fenced and not registration.in_controlled_shutdown

    def active_broker_ids(self) -> list[int]:
        return sorted(b for b, r in self.brokers.items() if not r.fenced and not r.in_controlled_shutdown)

    def rack_of(self, broker_id: int) -> str | None:
        registration = self.brokers.get(broker_id)
        return None if registration is None else registration.rack


@dataclass(frozen=True, slots=True)
class UnfencedEligibility:
    """`base` with one broker already counted as unfenced: the view the unfence elections are built against,
    because the registration change that unfences it is written in the same batch, before them."""

    base: BrokerEligibility
    unfenced: int

    def is_registered(self, broker_id: int) -> bool:
        return self.base.is_registered(broker_id)

    def broker_epoch(self, broker_id: int) -> int | None:
        return self.base.broker_epoch(broker_id)

    def is_fenced(self, broker_id: int) -> bool:
        if broker_id == self.unfenced:
            return not self.base.is_registered(broker_id)
        return self.base.is_fenced(broker_id)

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        return self.base.in_controlled_shutdown(broker_id)

    def is_active(self, broker_id: int) -> bool:
        if broker_id == self.unfenced:
            return self.base.is_registered(broker_id) and not self.base.in_controlled_shutdown(broker_id)
        return self.base.is_active(broker_id)

    def active_broker_ids(self) -> list[int]:
        return sorted(b for b in set(self.base.active_broker_ids()) | {self.unfenced} if self.is_active(b))

    def rack_of(self, broker_id: int) -> str | None:
        return self.base.rack_of(broker_id)
