"""The BrokerHeartbeat state machine, one test per transition (reference §8.2, KIP-841)."""

from __future__ import annotations

import pytest
from kio.schema.broker_heartbeat.v0.request import BrokerHeartbeatRequest as HeartbeatV0
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from pykraft.controller.broker_lifecycle import BrokerState, next_broker_state
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2

from .broker_fakes import FakePartitionChange, Harness

F, U, CS, SN = BrokerState.FENCED, BrokerState.UNFENCED, BrokerState.CONTROLLED_SHUTDOWN, BrokerState.SHUTDOWN_NOW


def _change(h: Harness, broker_id: int, *, fenced: int = 0, shutdown: int = 0) -> BrokerRegistrationChangeRecordV2:
    return BrokerRegistrationChangeRecordV2(broker_id=BrokerId(broker_id),
                                            broker_epoch=h.cluster.broker_epoch(broker_id),
                                            fenced=fenced, in_controlled_shutdown=shutdown)


@pytest.mark.parametrize(("current", "want_fence", "want_shut_down", "caught_up", "leads", "done", "expected"), [
    (F, False, True, False, False, False, SN),
    (F, False, False, True, False, False, U),
    (F, False, False, False, False, False, F),
    (F, True, False, True, False, False, F),
    (U, True, False, True, True, False, F),
    (U, True, True, True, True, False, SN),
    (U, False, True, True, True, False, CS),
    (U, False, True, True, False, False, SN),
    (U, False, False, True, True, False, U),
    (CS, False, True, True, True, True, CS),
    (CS, False, True, True, False, False, CS),
    (CS, False, True, True, False, True, SN),
    (CS, False, False, True, False, False, CS),
])
def test_next_broker_state_table(current: BrokerState, want_fence: bool, want_shut_down: bool, caught_up: bool,
                                 leads: bool, done: bool, expected: BrokerState) -> None:
    assert next_broker_state(current, want_fence, want_shut_down, caught_up, leads, done) is expected


def test_fenced_broker_behind_its_registration_stays_fenced() -> None:
    h = Harness()
    h.register(1)
    registered_at = h.cluster.registration_offset(1)
    response = h.heartbeat(1, offset=registered_at - 1)
    assert response.error_code == ErrorCode.none
    assert (response.is_caught_up, response.is_fenced, response.should_shut_down) == (False, True, False)
    assert h.records_since(registered_at + 1) == [] and h.cluster.is_fenced(1)


def test_fenced_broker_caught_up_with_its_registration_is_unfenced() -> None:
    h = Harness()
    h.register(1)
    registered_at = h.cluster.registration_offset(1)
    response = h.heartbeat(1, offset=registered_at)
    assert (response.is_caught_up, response.is_fenced, response.should_shut_down) == (True, False, False)
    # The registration change comes first, then elections built with the broker already counted as active.
    assert h.records_since(registered_at + 1) == [_change(h, 1, fenced=-1), FakePartitionChange("unfence", 1)]
    assert h.partitions.views == [("unfence", 1, True)]
    assert h.cluster.is_active(1)


def test_fenced_broker_that_wants_fence_stays_fenced() -> None:
    h = Harness()
    h.register(1)
    response = h.heartbeat(1, want_fence=True)
    assert response.is_caught_up and response.is_fenced and h.cluster.is_fenced(1)


def test_fenced_broker_that_wants_shutdown_shuts_down_now_without_records() -> None:
    h = Harness()
    h.register(1)
    before = h.next_offset
    response = h.heartbeat(1, offset=0, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced and h.records_since(before) == []


def test_unfenced_broker_that_wants_fence_is_fenced_partitions_first() -> None:
    h = Harness()
    h.unfenced_broker(1)
    before = h.next_offset
    response = h.heartbeat(1, want_fence=True)
    assert response.is_fenced and not response.should_shut_down
    assert h.records_since(before) == [FakePartitionChange("fence", 1), _change(h, 1, fenced=1)]
    assert h.partitions.views[-1] == ("fence", 1, False)  # built with the broker already ineligible
    assert h.cluster.is_fenced(1)


def test_unfenced_broker_that_wants_fence_and_shutdown_shuts_down_now() -> None:
    h = Harness()
    h.unfenced_broker(1)
    before = h.next_offset
    response = h.heartbeat(1, want_fence=True, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced
    assert h.records_since(before) == [FakePartitionChange("fence", 1), _change(h, 1, fenced=1)]


def test_unfenced_broker_leading_nothing_that_wants_shutdown_shuts_down_now() -> None:
    h = Harness()
    h.unfenced_broker(1)
    before = h.next_offset
    response = h.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced and h.cluster.is_fenced(1)
    assert h.records_since(before) == [FakePartitionChange("fence", 1), _change(h, 1, fenced=1)]


def test_unfenced_leader_that_wants_shutdown_enters_controlled_shutdown() -> None:
    h = Harness()
    h.unfenced_broker(1)
    h.partitions.led[1] = 2
    before = h.next_offset
    response = h.heartbeat(1, want_shut_down=True)
    assert (response.is_fenced, response.should_shut_down) == (False, False)
    assert h.records_since(before) == [_change(h, 1, shutdown=1), FakePartitionChange("shutdown", 1)]
    assert h.partitions.views[-1] == ("shutdown", 1, False)
    assert h.cluster.in_controlled_shutdown(1) and not h.cluster.is_active(1) and not h.cluster.is_fenced(1)
    # The controlled-shutdown offset is the end of that batch.
    assert h.heartbeats.session(1).controlled_shutdown_offset == h.next_offset - 1


def test_controlled_shutdown_waits_until_every_active_broker_passed_its_offset() -> None:
    h = Harness()
    h.unfenced_broker(1)
    h.unfenced_broker(2)
    h.partitions.led[1] = 1
    h.heartbeat(1, want_shut_down=True)
    shutdown_offset = h.heartbeats.session(1).controlled_shutdown_offset
    h.heartbeat(2, offset=shutdown_offset - 1)
    response = h.heartbeat(1, want_shut_down=True)
    assert not response.should_shut_down and not response.is_fenced
    h.heartbeat(2, offset=shutdown_offset)
    before = h.next_offset
    response = h.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced
    assert h.records_since(before) == [FakePartitionChange("fence", 1), _change(h, 1, fenced=1)]
    assert h.cluster.is_fenced(1)


def test_controlled_shutdown_waits_while_the_broker_still_leads() -> None:
    h = Harness()
    h.unfenced_broker(1)
    h.partitions.led[1] = 1
    h.heartbeat(1, want_shut_down=True)
    h.partitions.led[1] = 1  # say no other replica could take over
    assert not h.heartbeat(1, want_shut_down=True).should_shut_down
    h.partitions.led[1] = 0
    assert h.heartbeat(1, want_shut_down=True).should_shut_down


def test_controlled_shutdown_is_not_left_by_no_longer_wanting_shutdown() -> None:
    h = Harness()
    h.unfenced_broker(1)
    h.unfenced_broker(2)
    h.partitions.led[1] = 1
    h.heartbeat(1, want_shut_down=True)
    before = h.next_offset
    response = h.heartbeat(1, want_shut_down=False)
    assert not response.is_fenced and h.cluster.in_controlled_shutdown(1) and h.records_since(before) == []


def test_persisted_controlled_shutdown_is_honoured_without_soft_state() -> None:
    """After failover only the registration says the broker is shutting down (KIP-841 persisted it)."""
    h = Harness()
    h.unfenced_broker(1)
    h.unfenced_broker(2)
    h.partitions.led[1] = 1
    h.heartbeat(1, want_shut_down=True)
    h.partitions.led[1] = 0
    h.heartbeats.sessions.clear()
    h.heartbeat(2, offset=0)  # an active broker far behind
    first = h.heartbeat(1, want_shut_down=True)
    assert not first.should_shut_down and not first.is_fenced
    h.heartbeat(2)
    assert h.heartbeat(1, want_shut_down=True).should_shut_down


def test_heartbeat_with_a_stale_broker_epoch_is_stale_broker_epoch() -> None:
    h = Harness()
    h.register(1)
    response = h.heartbeat(1, epoch=h.cluster.broker_epoch(1) - 1)
    assert response.error_code == ErrorCode.stale_broker_epoch
    assert (response.is_caught_up, response.is_fenced, response.should_shut_down) == (False, True, False)


def test_heartbeat_from_an_unregistered_broker_is_stale_broker_epoch() -> None:
    h = Harness()
    assert h.heartbeat(7, epoch=5).error_code == ErrorCode.stale_broker_epoch and h.log == []


def test_heartbeat_response_version_follows_the_request() -> None:
    h = Harness()
    h.register(1)
    request = HeartbeatV0(broker_id=BrokerId(1), broker_epoch=i64(h.cluster.broker_epoch(1)),
                          current_metadata_offset=i64(h.next_offset), want_fence=False, want_shut_down=False)
    result = h.apply(h.lifecycle.handle_heartbeat(request, 0, h.next_offset))
    assert result.response.__version__ == 0 and not result.response.is_fenced
