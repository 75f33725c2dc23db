"""BrokerRegistration, BrokerHeartbeat, UnregisterBroker and ControllerRegistration (reference §8.2, KIP-841).

The heartbeat drives each broker through FENCED -> UNFENCED -> CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW (the table is
`next_broker_state`). The records each transition writes keep the KIP-841 invariants in every committed image:

- fence (and SHUTDOWN_NOW): the partition changes removing the broker from ISRs and leadership come FIRST, built
  against a view where the broker is already ineligible, then BrokerRegistrationChangeRecord{Fenced=1};
- unfence: BrokerRegistrationChangeRecord{Fenced=-1} first, then elections for leaderless partitions, built
  against a view where the broker already counts as unfenced;
- controlled shutdown: BrokerRegistrationChangeRecord{InControlledShutdown=1}, then the partition changes moving
  leadership away and out of ISRs (as Kafka orders it; the batch is atomic, so no image sees half of it).

The partition side is anything with the `PartitionSide` methods (ReplicationControl in production).
"""

from __future__ import annotations

import enum
import uuid
from typing import Any, Protocol

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i64

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.unregister_broker_record import UnregisterBrokerRecordV0

from .cluster import (
    FENCE,
    IN_CONTROLLED_SHUTDOWN,
    UNFENCE,
    BrokerRegistration,
    ClusterControl,
    ControllerRegistration,
    UnfencedEligibility,
    endpoints_of,
    features_of,
    supported_range,
)
from .eligibility import BrokerEligibility, ExcludingEligibility
from .features import FeatureControl
from .heartbeats import HeartbeatManager
from .result import ControllerResult

hb_v0 = schema_module("kio.schema.broker_heartbeat.v0.response")
hb_v1 = schema_module("kio.schema.broker_heartbeat.v1.response")
hb_v2 = schema_module("kio.schema.broker_heartbeat.v2.response")
reg_v0 = schema_module("kio.schema.broker_registration.v0.response")
reg_v1 = schema_module("kio.schema.broker_registration.v1.response")
reg_v2 = schema_module("kio.schema.broker_registration.v2.response")
reg_v3 = schema_module("kio.schema.broker_registration.v3.response")
reg_v4 = schema_module("kio.schema.broker_registration.v4.response")
controller_registration = schema_module("kio.schema.controller_registration.v0.response")
unregister = schema_module("kio.schema.unregister_broker.v0.response")

_REGISTRATION_RESPONSES = {0: reg_v0, 1: reg_v1, 2: reg_v2, 3: reg_v3, 4: reg_v4}
_HEARTBEAT_RESPONSES = {0: hb_v0, 1: hb_v1, 2: hb_v2}
# Kafka's DirectoryId reserves the uuids whose high 64 bits are 0 and low 64 bits are below 100 (UNASSIGNED,
# LOST, MIGRATING, ...); kio reads the all-zero uuid as None.
_RESERVED_DIRECTORY_IDS = 100

class PartitionSide(Protocol):
    def partitions_led_by(self, broker_id: int) -> int: ...

    def records_for_fence(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]: ...

    def records_for_controlled_shutdown(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]: ...

    def records_for_unfence(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]: ...

    def records_for_unregister(self, broker_id: int, brokers: BrokerEligibility) -> list[Any]: ...


class BrokerState(enum.Enum):
    """Kafka's BrokerControlState."""

    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled_shutdown"
    SHUTDOWN_NOW = "shutdown_now"

    @property
    def fenced(self) -> bool:
        """What the heartbeat reply's IsFenced says in this state."""
        return self in (BrokerState.FENCED, BrokerState.SHUTDOWN_NOW)

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerState.SHUTDOWN_NOW


def next_broker_state(current: BrokerState, want_fence: bool, want_shut_down: bool, caught_up: bool,
                      leads_partitions: bool, shutdown_done: bool) -> BrokerState:
    """The heartbeat state machine (Kafka's calculateNextBrokerState). `caught_up`: the broker's metadata offset
    reached its RegisterBrokerRecord. `shutdown_done`: every active broker replayed past the offset where this
    broker entered controlled shutdown."""
    if current is BrokerState.FENCED:
        if want_shut_down:
            return BrokerState.SHUTDOWN_NOW
        return BrokerState.UNFENCED if not want_fence and caught_up else BrokerState.FENCED
    if current is BrokerState.UNFENCED:
        if want_fence:
            return BrokerState.SHUTDOWN_NOW if want_shut_down else BrokerState.FENCED
        if want_shut_down:
            return BrokerState.CONTROLLED_SHUTDOWN if leads_partitions else BrokerState.SHUTDOWN_NOW
        return BrokerState.UNFENCED
    if current is BrokerState.CONTROLLED_SHUTDOWN:
        # A broker that changed its mind cannot leave controlled shutdown except by re-registering (KIP-841).
        return BrokerState.SHUTDOWN_NOW if not leads_partitions and shutdown_done else current
    return BrokerState.SHUTDOWN_NOW


class BrokerLifecycle:
    def __init__(self, cluster_id: str, cluster: ClusterControl, heartbeats: HeartbeatManager,
                 features: FeatureControl, partitions: PartitionSide) -> None:
        self.cluster_id = cluster_id
        self.cluster = cluster
        self.heartbeats = heartbeats
        self.features = features
        self.partitions = partitions

    # ---- BrokerRegistration ------------------------------------------------------------------------------------
    def handle_registration(self, request: Any, now_ms: int, next_offset: int) -> ControllerResult:
        version = int(request.__version__)
        error = self._registration_error(request, now_ms, version)
        if error is not None:
            return ControllerResult((), _registration_response(version, error))
        broker_id = int(request.broker_id)
        existing = self.cluster.registration(broker_id)
        new_incarnation = existing is None or existing.incarnation_id != request.incarnation_id
        records: list[Any] = []
        if existing is not None and new_incarnation and not existing.fenced:
            # The old incarnation is gone: take it out of ISRs and leadership before the fenced registration.
            records += self.fence_partition_records(broker_id)
        if new_incarnation:
            # Broker epoch = the offset of this RegisterBrokerRecord. A new incarnation starts fenced and, per
            # KIP-841, out of controlled shutdown.
            epoch, fenced, in_shutdown = next_offset + len(records), True, False
        else:
            assert existing is not None
            epoch, fenced, in_shutdown = existing.epoch, existing.fenced, existing.in_controlled_shutdown
        registration = BrokerRegistration(
            broker_id=broker_id, epoch=epoch, incarnation_id=request.incarnation_id,
            listeners=endpoints_of(request.listeners), features=features_of(request.features), rack=request.rack,
            fenced=fenced, in_controlled_shutdown=in_shutdown, log_dirs=tuple(getattr(request, "log_dirs", ())),
            is_migrating_zk_broker=bool(getattr(request, "is_migrating_zk_broker", False)))
        records.append(registration.to_record())
        self.heartbeats.register(broker_id, fenced, now_ms, new_incarnation)
        return ControllerResult(tuple(records), _registration_response(version, ErrorCode.NONE, epoch),
                                notes=_registration_notes(existing, registration, new_incarnation))

    def _registration_error(self, request: Any, now_ms: int, version: int) -> ErrorCode | None:
        if request.cluster_id != self.cluster_id:
            return ErrorCode.INCONSISTENT_CLUSTER_ID
        existing = self.cluster.registration(int(request.broker_id))
        if existing is not None and existing.incarnation_id != request.incarnation_id \
                and self.heartbeats.has_valid_session(existing.broker_id, now_ms):
            return ErrorCode.DUPLICATE_BROKER_REGISTRATION
        if version >= 2 and not _valid_log_dirs(tuple(request.log_dirs)):
            return ErrorCode.INVALID_REGISTRATION
        offered = features_of(request.features)
        for feature, level in self.features.finalized_levels().items():
            supported = supported_range(offered, feature)
            # v0-v3 requests leave out features whose minimum is 0: absent means "level 0 only".
            if (supported is None and level != 0) or (supported is not None and not supported.contains(level)):
                return ErrorCode.UNSUPPORTED_VERSION
        return None

    # ---- BrokerHeartbeat ---------------------------------------------------------------------------------------
    def handle_heartbeat(self, request: Any, now_ms: int, next_offset: int) -> ControllerResult:
        version = int(request.__version__)
        broker_id = int(request.broker_id)
        registration = self.cluster.registration(broker_id)
        if registration is None or registration.epoch != int(request.broker_epoch):
            return ControllerResult((), _heartbeat_response(version, ErrorCode.STALE_BROKER_EPOCH))
        offset = int(request.current_metadata_offset)
        caught_up = offset >= self.cluster.registration_offset(broker_id)
        self.heartbeats.ensure(broker_id, registration.fenced, now_ms)
        current = self._current_state(registration, next_offset)
        led = self.partitions.partitions_led_by(broker_id)
        nxt = next_broker_state(current, bool(request.want_fence), bool(request.want_shut_down), caught_up,
                                led > 0, self._shutdown_done(broker_id))
        records = self._transition_records(registration, current, nxt)
        self.heartbeats.touch(broker_id, nxt.fenced, offset, now_ms)
        if nxt is BrokerState.CONTROLLED_SHUTDOWN:
            # The end offset of this batch: every active broker must replay it before this one may stop.
            self.heartbeats.maybe_update_controlled_shutdown_offset(broker_id, next_offset + len(records) - 1)
        note = _transition_note(broker_id, current, nxt, offset, self.cluster.registration_offset(broker_id), led)
        return ControllerResult(tuple(records), _heartbeat_response(
            version, ErrorCode.NONE, caught_up=caught_up, fenced=nxt.fenced, shut_down=nxt.should_shut_down),
            notes=() if note is None else (note,))

    def _current_state(self, registration: BrokerRegistration, next_offset: int) -> BrokerState:
        if registration.fenced:
            return BrokerState.FENCED
        session = self.heartbeats.session(registration.broker_id)
        if registration.in_controlled_shutdown or (session is not None and session.shutting_down):
            if session is not None and not session.shutting_down:
                # Persisted (KIP-841) but not in this controller's soft state: everything written so far must
                # be replayed by the active brokers, which includes the record that started the shutdown.
                self.heartbeats.maybe_update_controlled_shutdown_offset(registration.broker_id, next_offset - 1)
            return BrokerState.CONTROLLED_SHUTDOWN
        return BrokerState.UNFENCED

    def _shutdown_done(self, broker_id: int) -> bool:
        session = self.heartbeats.session(broker_id)
        if session is None or not session.shutting_down:
            return False
        lowest = self.heartbeats.lowest_active_offset()
        return lowest is None or session.controlled_shutdown_offset <= lowest

    def _transition_records(self, registration: BrokerRegistration, current: BrokerState,
                            nxt: BrokerState) -> list[Any]:
        broker_id = registration.broker_id
        if nxt is current or (nxt.fenced and registration.fenced):
            return []  # no change, or already fenced (FENCED -> SHUTDOWN_NOW)
        if nxt.fenced:
            return self.fence_records(registration)
        if nxt is BrokerState.UNFENCED:
            change = _change_record(registration, fenced=UNFENCE)
            return [change, *self.partitions.records_for_unfence(broker_id, UnfencedEligibility(self.cluster,
                                                                                               broker_id))]
        change = _change_record(registration, in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN)
        return [change, *self.partitions.records_for_controlled_shutdown(
            broker_id, ExcludingEligibility(self.cluster, broker_id))]

    # ---- fencing -----------------------------------------------------------------------------------------------
    def fence_partition_records(self, broker_id: int) -> list[Any]:
        return list(self.partitions.records_for_fence(broker_id, ExcludingEligibility(self.cluster, broker_id)))

    def fence_records(self, registration: BrokerRegistration) -> list[Any]:
        """Partition changes first, then the registration change: no image shows a fenced leader or ISR member."""
        return [*self.fence_partition_records(registration.broker_id), _change_record(registration, fenced=FENCE)]

    def maybe_fence_one_stale_broker(self, now_ms: int) -> ControllerResult:
        """Fence the broker whose session expired longest ago, if any; one per call (KAFKA-13173)."""
        broker_id = self.heartbeats.find_one_stale_broker(now_ms)
        if broker_id is None:
            return ControllerResult()
        registration = self.cluster.registration(broker_id)
        session = self.heartbeats.session(broker_id)
        silent_ms = -1 if session is None else now_ms - session.last_contact_ms
        self.heartbeats.fence(broker_id)
        if registration is None or registration.fenced:
            return ControllerResult()
        return ControllerResult(tuple(self.fence_records(registration)), notes=(
            f"Fencing broker {broker_id} because its session has timed out: no heartbeat for {silent_ms} ms "
            f"(broker.session.timeout.ms={self.heartbeats.session_timeout_ms})",))

    # ---- UnregisterBroker --------------------------------------------------------------------------------------
    def handle_unregister(self, request: Any) -> ControllerResult:
        broker_id = int(request.broker_id)
        registration = self.cluster.registration(broker_id)
        if registration is None:
            return ControllerResult((), unregister.UnregisterBrokerResponse(
                throttle_time=ZERO_THROTTLE, error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
                error_message=f"Broker ID {broker_id} is not currently registered"))
        records = list(self.partitions.records_for_unregister(broker_id,
                                                              ExcludingEligibility(self.cluster, broker_id)))
        records.append(UnregisterBrokerRecordV0(broker_id=BrokerId(broker_id), broker_epoch=i64(registration.epoch)))
        self.heartbeats.remove(broker_id)
        return ControllerResult(tuple(records), unregister.UnregisterBrokerResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None),
            notes=(f"Unregistering broker {broker_id} (epoch {registration.epoch})",))


def _registration_notes(existing: BrokerRegistration | None, registration: BrokerRegistration,
                        new_incarnation: bool) -> tuple[str, ...]:
    broker_id = registration.broker_id
    if not new_incarnation:
        return ()
    if existing is None:
        return (f"Registering broker {broker_id} (incarnation {registration.incarnation_id}) with broker epoch "
                f"{registration.epoch}; it stays fenced until it catches up with the metadata log",)
    fenced_old = "" if existing.fenced else "; its previous incarnation is fenced and leaves the ISRs"
    return (f"Registering a new incarnation of broker {broker_id}: incarnation {registration.incarnation_id} "
            f"replaces {existing.incarnation_id}, new broker epoch {registration.epoch}{fenced_old}",)


def _transition_note(broker_id: int, current: BrokerState, nxt: BrokerState, offset: int, registered_at: int,
                     led: int) -> str | None:
    """What a heartbeat made of the broker, in words (Kafka's controller logs each fencing with its reason)."""
    if nxt is current:
        return None
    if current is BrokerState.FENCED and nxt is BrokerState.UNFENCED:
        return (f"Unfencing broker {broker_id}: it has caught up with the metadata log (offset {offset}, its "
                f"registration at {registered_at})")
    if nxt is BrokerState.FENCED:
        return f"Fencing broker {broker_id} because it asked to be fenced"
    if nxt is BrokerState.CONTROLLED_SHUTDOWN:
        return f"Broker {broker_id} began a controlled shutdown: moving the leadership of its {led} partition(s)"
    if nxt is BrokerState.SHUTDOWN_NOW:
        if current is BrokerState.FENCED:
            return f"Broker {broker_id} (fenced) may shut down"
        return (f"Fencing broker {broker_id} and letting it shut down: it leads no partition and the active brokers "
                f"have replayed its shutdown")
    return None


def _valid_log_dirs(log_dirs: tuple[uuid.UUID | None, ...]) -> bool:
    """At least one directory, none reserved, no duplicates (else INVALID_REGISTRATION, as Kafka checks)."""
    if not log_dirs or len(set(log_dirs)) != len(log_dirs):
        return False
    return all(d is not None and d.int >= _RESERVED_DIRECTORY_IDS for d in log_dirs)


def _change_record(registration: BrokerRegistration, *, fenced: int = 0,
                   in_controlled_shutdown: int = 0) -> BrokerRegistrationChangeRecordV2:
    return BrokerRegistrationChangeRecordV2(broker_id=BrokerId(registration.broker_id),
                                            broker_epoch=i64(registration.epoch), fenced=i8(fenced),
                                            in_controlled_shutdown=i8(in_controlled_shutdown))


def _registration_response(version: int, error: ErrorCode, epoch: int = -1) -> Any:
    module = _REGISTRATION_RESPONSES[version]
    return module.BrokerRegistrationResponse(throttle_time=ZERO_THROTTLE, error_code=error, broker_epoch=i64(epoch))


def _heartbeat_response(version: int, error: ErrorCode, *, caught_up: bool = False, fenced: bool = True,
                        shut_down: bool = False) -> Any:
    module = _HEARTBEAT_RESPONSES[version]
    return module.BrokerHeartbeatResponse(throttle_time=ZERO_THROTTLE, error_code=error, is_caught_up=caught_up,
                                          is_fenced=fenced, should_shut_down=shut_down)



# ---- ControllerRegistration ----------------------------------------------------------------------------------------
# Controller registrations need metadata.version 3.7-IV0 (level 15) or later, as in Kafka.
CONTROLLER_REGISTRATION_MIN_METADATA_VERSION = 15


def handle_controller_registration(request: Any, features: FeatureControl) -> ControllerResult:
    """Write the controller's listeners and supported features (RegisterControllerRecord); no other checks."""
    metadata_version = features.metadata_version
    if metadata_version is not None and metadata_version < CONTROLLER_REGISTRATION_MIN_METADATA_VERSION:
        return ControllerResult((), controller_registration.ControllerRegistrationResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.UNSUPPORTED_VERSION,
            error_message="The current MetadataVersion is too old to support controller registrations."))
    registration = ControllerRegistration(
        controller_id=int(request.controller_id), incarnation_id=request.incarnation_id,
        zk_migration_ready=bool(request.zk_migration_ready), listeners=endpoints_of(request.listeners),
        features=features_of(request.features))
    return ControllerResult((registration.to_record(),), controller_registration.ControllerRegistrationResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None))
