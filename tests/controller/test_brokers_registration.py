"""BrokerRegistration, UnregisterBroker and ControllerRegistration rules (reference §8.1-8.2, KIP-841)."""

from __future__ import annotations

import uuid

import pytest

from kio.schema.broker_registration.v0 import request as reg_v0
from kio.schema.controller_registration.v0 import request as ctl_req
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest
from kio.static.primitive import i16, i32, u16

from pykraft.controller.broker_lifecycle import handle_controller_registration
from pykraft.controller.cluster import ReplayError
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.register_broker_record import RegisterBrokerRecordV3
from pykraft.records.metadata.schema.register_controller_record import RegisterControllerRecordV0
from pykraft.records.metadata.schema.unregister_broker_record import UnregisterBrokerRecordV0

from .broker_fakes import CLUSTER_ID, SESSION_MS, FakePartitionChange, Harness, incarnation, log_dir


def test_registration_with_another_cluster_id_is_inconsistent_cluster_id() -> None:
    h = Harness()
    response = h.register(1, cluster_id="other")
    assert response.error_code == ErrorCode.inconsistent_cluster_id
    assert response.broker_epoch == -1 and h.log == []


def test_registration_with_empty_cluster_id_is_inconsistent_cluster_id() -> None:
    assert Harness().register(1, cluster_id="").error_code == ErrorCode.inconsistent_cluster_id


def test_broker_epoch_is_the_offset_of_its_register_broker_record() -> None:
    h = Harness(first_offset=4242)
    response = h.register(1)
    assert response.error_code == ErrorCode.none and response.broker_epoch == 4242
    (offset, record), = h.log
    assert offset == 4242 and isinstance(record, RegisterBrokerRecordV3) and record.broker_epoch == 4242
    assert h.cluster.broker_epoch(1) == 4242


def test_new_registration_starts_fenced() -> None:
    h = Harness()
    h.register(1)
    registration = h.cluster.registration(1)
    assert registration is not None and registration.fenced and not registration.in_controlled_shutdown
    assert h.cluster.is_fenced(1) and not h.cluster.is_active(1)


def test_registration_records_listeners_rack_features_and_log_dirs() -> None:
    h = Harness()
    h.register(1, rack="r1", port=9999)
    registration = h.cluster.registration(1)
    assert registration is not None
    assert [(e.name, e.host, e.port) for e in registration.listeners] == [("PLAINTEXT", "localhost", 9999)]
    assert h.cluster.rack_of(1) == "r1" and registration.log_dirs == (log_dir(1),)
    supported = registration.supported("metadata.version")
    assert supported is not None and (supported.min_version, supported.max_version) == (7, 27)


def test_same_incarnation_reregistering_keeps_its_epoch_and_fence_state() -> None:
    h = Harness()
    h.unfenced_broker(1)
    epoch = h.cluster.broker_epoch(1)
    response = h.register(1, rack="moved")
    assert response.error_code == ErrorCode.none and response.broker_epoch == epoch
    assert h.cluster.broker_epoch(1) == epoch and not h.cluster.is_fenced(1) and h.cluster.rack_of(1) == "moved"


def test_another_incarnation_while_the_session_is_valid_is_duplicate_broker_registration() -> None:
    h = Harness()
    h.unfenced_broker(1, now_ms=0)
    before = len(h.log)
    response = h.register(1, inc=2, now_ms=SESSION_MS)  # last contact + timeout >= now: still valid
    assert response.error_code == ErrorCode.duplicate_broker_registration
    assert len(h.log) == before


def test_another_incarnation_after_the_session_expired_gets_a_new_epoch_and_starts_fenced() -> None:
    h = Harness()
    h.unfenced_broker(1, now_ms=0)
    old_epoch = h.cluster.broker_epoch(1)
    response = h.register(1, inc=2, now_ms=SESSION_MS + 1)
    assert response.error_code == ErrorCode.none
    # The old incarnation leaves ISRs and leadership first, so the new epoch is the offset after that record.
    (fence_at, fence), (reg_at, reg) = [(at, r) for at, r in h.log if at >= response.broker_epoch - 1]
    assert fence == FakePartitionChange("fence", 1) and isinstance(reg, RegisterBrokerRecordV3)
    assert response.broker_epoch == reg_at == fence_at + 1 != old_epoch
    assert h.cluster.is_fenced(1) and h.cluster.registration(1).incarnation_id == incarnation(2)


def test_another_incarnation_may_replace_a_fenced_broker_at_once() -> None:
    h = Harness()
    h.register(1, now_ms=0)  # registered, fenced: a fenced broker has no session to protect
    response = h.register(1, inc=2, now_ms=1)
    assert response.error_code == ErrorCode.none
    assert h.partitions.views == []  # nothing to take it out of: it was fenced already


def test_only_a_new_incarnation_clears_controlled_shutdown() -> None:
    h = Harness()
    h.unfenced_broker(1)
    h.partitions.led[1] = 3
    h.heartbeat(1, want_shut_down=True)
    assert h.cluster.in_controlled_shutdown(1)
    h.register(1)  # the same incarnation amends its registration: still shutting down
    assert h.cluster.in_controlled_shutdown(1)
    h.register(1, inc=2, now_ms=SESSION_MS + 1)
    assert not h.cluster.in_controlled_shutdown(1) and h.cluster.is_fenced(1)


def test_registration_not_supporting_the_finalized_metadata_version_is_unsupported_version() -> None:
    h = Harness(mv=27)
    assert h.register(1, mv_range=(7, 26)).error_code == ErrorCode.unsupported_version
    assert h.register(2, mv_range=(27, 30)).error_code == ErrorCode.none
    assert h.cluster.registration(1) is None


def test_registration_missing_a_finalized_feature_is_unsupported_version() -> None:
    h = Harness()
    h.features.replay(FeatureLevelRecordV0(name="group.version", feature_level=i16(1)))
    assert h.register(1).error_code == ErrorCode.unsupported_version
    assert h.register(1, extra_features=(("group.version", 0, 1),)).error_code == ErrorCode.none


def test_registration_must_support_the_finalized_kraft_version() -> None:
    h = Harness()
    h.features.kraft_version = 1
    assert h.register(1).error_code == ErrorCode.unsupported_version
    assert h.register(1, extra_features=(("kraft.version", 0, 1),)).error_code == ErrorCode.none


def test_registration_without_log_dirs_or_with_duplicate_or_reserved_ones_is_invalid_registration() -> None:
    h = Harness()
    for dirs in [(), (log_dir(5), log_dir(5)), (uuid.UUID(int=1),), (None,)]:
        assert h.register(1, log_dirs=dirs).error_code == ErrorCode.invalid_registration, dirs
    assert h.log == []
    assert h.register(1, log_dirs=(log_dir(5), log_dir(6))).error_code == ErrorCode.none


def test_version_0_registration_needs_no_log_dirs_and_gets_a_version_0_response() -> None:
    h = Harness()
    request = reg_v0.BrokerRegistrationRequest(
        broker_id=BrokerId(4), cluster_id=CLUSTER_ID, incarnation_id=incarnation(1),
        listeners=(reg_v0.Listener(name="PLAINTEXT", host="h", port=u16(1), security_protocol=i16(0)),),
        features=(reg_v0.Feature(name="metadata.version", min_supported_version=i16(7),
                                 max_supported_version=i16(27)),), rack=None)
    result = h.apply(h.lifecycle.handle_registration(request, 0, h.next_offset))
    assert result.response.__version__ == 0 and result.response.error_code == ErrorCode.none
    assert h.cluster.registration(4) is not None


def test_unregistering_an_unknown_broker_is_broker_id_not_registered() -> None:
    result = Harness().lifecycle.handle_unregister(UnregisterBrokerRequest(broker_id=BrokerId(9)))
    assert result.records == () and result.response.error_code == ErrorCode.broker_id_not_registered
    assert result.response.error_message == "Broker ID 9 is not currently registered"


def test_unregister_moves_partitions_away_then_removes_the_registration() -> None:
    h = Harness()
    h.unfenced_broker(1)
    epoch = h.cluster.broker_epoch(1)
    result = h.apply(h.lifecycle.handle_unregister(UnregisterBrokerRequest(broker_id=BrokerId(1))))
    assert result.response.error_code == ErrorCode.none
    assert result.records == (FakePartitionChange("unregister", 1),
                              UnregisterBrokerRecordV0(broker_id=BrokerId(1), broker_epoch=epoch))
    assert h.partitions.views[-1] == ("unregister", 1, False)  # built with the broker already ineligible
    assert not h.cluster.is_registered(1) and h.heartbeats.session(1) is None


def _controller_request(controller_id: int) -> ctl_req.ControllerRegistrationRequest:
    return ctl_req.ControllerRegistrationRequest(
        controller_id=i32(controller_id), incarnation_id=incarnation(controller_id), zk_migration_ready=False,
        listeners=(ctl_req.Listener(name="CONTROLLER", host="c", port=u16(9093), security_protocol=i16(0)),),
        features=(ctl_req.Feature(name="kraft.version", min_supported_version=i16(0),
                                  max_supported_version=i16(1)),))


def test_controller_registration_writes_a_register_controller_record() -> None:
    h = Harness()
    result = h.apply(handle_controller_registration(_controller_request(3000), h.features))
    assert result.response.error_code == ErrorCode.none
    (record,) = result.records
    assert isinstance(record, RegisterControllerRecordV0) and record.controller_id == 3000
    registration = h.cluster.controllers[3000]
    assert registration.supported("kraft.version") is not None and registration.listeners[0].port == 9093


def test_controller_registration_needs_metadata_version_3_7() -> None:
    h = Harness(mv=14)
    result = handle_controller_registration(_controller_request(3000), h.features)
    assert result.records == () and result.response.error_code == ErrorCode.unsupported_version


def test_registration_change_for_another_epoch_changes_nothing() -> None:
    h = Harness()
    h.register(1)
    stale = BrokerRegistrationChangeRecordV2(broker_id=BrokerId(1), broker_epoch=h.cluster.broker_epoch(1) + 1,
                                             fenced=-1)
    with pytest.raises(ReplayError):
        h.cluster.replay(stale, 500)
    assert h.cluster.is_fenced(1)
