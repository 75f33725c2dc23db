"""Broker sessions on the active controller: expiry, fencing one stale broker at a time, touches (reference §8.1)."""

from __future__ import annotations

from pykraft.controller.heartbeats import HeartbeatManager
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2

from .broker_fakes import SESSION_MS, FakePartitionChange, Harness


def test_session_is_valid_up_to_and_including_the_timeout() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=False, metadata_offset=5, now_ms=1000)
    assert manager.has_valid_session(1, 1000 + SESSION_MS)
    assert not manager.has_valid_session(1, 1000 + SESSION_MS + 1)


def test_fenced_broker_has_no_valid_session_and_is_never_stale() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=True, metadata_offset=5, now_ms=0)
    assert not manager.has_valid_session(1, 0)
    assert manager.find_one_stale_broker(10 * SESSION_MS) is None


def test_stale_broker_is_the_one_heard_from_longest_ago() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=False, metadata_offset=0, now_ms=300)
    manager.touch(2, fenced=False, metadata_offset=0, now_ms=100)
    manager.touch(3, fenced=False, metadata_offset=0, now_ms=200)
    assert manager.find_one_stale_broker(100 + SESSION_MS) is None
    assert manager.find_one_stale_broker(100 + SESSION_MS + 1) == 2
    assert manager.timed_out_heartbeats == 1
    assert manager.next_check_ms() == 100 + SESSION_MS + 1


def test_late_heartbeat_never_moves_contact_time_back() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=False, metadata_offset=0, now_ms=5000)
    manager.touch(1, fenced=False, metadata_offset=1, now_ms=4000)
    assert manager.session(1).last_contact_ms == 5000 and manager.session(1).metadata_offset == 1


def test_lowest_active_offset_ignores_fenced_and_shutting_down_brokers() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=False, metadata_offset=50, now_ms=0)
    manager.touch(2, fenced=True, metadata_offset=1, now_ms=0)
    manager.touch(3, fenced=False, metadata_offset=2, now_ms=0)
    manager.maybe_update_controlled_shutdown_offset(3, 40)
    assert manager.lowest_active_offset() == 50
    manager.maybe_update_controlled_shutdown_offset(3, 45)  # the first offset recorded wins
    assert manager.session(3).controlled_shutdown_offset == 40


def test_reseed_restarts_every_session_clock() -> None:
    manager = HeartbeatManager(SESSION_MS)
    manager.touch(1, fenced=False, metadata_offset=0, now_ms=0)
    manager.reseed([(1, False), (2, False), (3, True)], now_ms=50_000, shutting_down=[(2, 77)])
    assert manager.find_one_stale_broker(50_000 + SESSION_MS) is None
    assert {b: s.last_contact_ms for b, s in manager.sessions.items()} == {1: 50_000, 2: 50_000, 3: 50_000}
    assert manager.session(2).controlled_shutdown_offset == 77 and manager.session(3).fenced


def test_expired_sessions_are_fenced_one_per_check() -> None:
    h = Harness()
    for broker_id in (1, 2, 3):
        h.unfenced_broker(broker_id, now_ms=broker_id)
    now = 3 + SESSION_MS + 1  # all three sessions have expired
    fenced_order = []
    for _ in range(4):
        result = h.apply(h.lifecycle.maybe_fence_one_stale_broker(now))
        if result.records:
            fence, change = result.records
            assert isinstance(fence, FakePartitionChange) and isinstance(change, BrokerRegistrationChangeRecordV2)
            assert change.fenced == 1 and fence.broker_id == change.broker_id
            fenced_order.append(change.broker_id)
    assert fenced_order == [1, 2, 3]
    assert all(h.cluster.is_fenced(b) for b in (1, 2, 3))
    assert h.heartbeats.timed_out_heartbeats == 3


def test_heartbeat_keeps_the_session_alive() -> None:
    h = Harness()
    h.unfenced_broker(1, now_ms=0)
    h.heartbeat(1, now_ms=SESSION_MS)
    assert h.lifecycle.maybe_fence_one_stale_broker(SESSION_MS + 1).records == ()
    assert h.lifecycle.maybe_fence_one_stale_broker(2 * SESSION_MS + 1).records != ()


def test_broker_fenced_for_a_stale_session_can_be_unfenced_by_its_next_heartbeat() -> None:
    h = Harness()
    h.unfenced_broker(1, now_ms=0)
    h.apply(h.lifecycle.maybe_fence_one_stale_broker(SESSION_MS + 1))
    assert h.cluster.is_fenced(1)
    response = h.heartbeat(1, now_ms=SESSION_MS + 2)
    assert not response.is_fenced and h.cluster.is_active(1)
