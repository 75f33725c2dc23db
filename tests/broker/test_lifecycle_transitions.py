"""BrokerLifecycle: the happy path through every state, heartbeat timing and the requests it builds."""

from __future__ import annotations

from pykraft.broker.actions import BrokerState, ShutdownComplete, StateChanged
from pykraft.broker.lifecycle import BROKER_HEARTBEAT, BROKER_REGISTRATION

from .lifecycle_helpers import CLUSTER_ID, INCARNATION, LOG_DIR, Driver, heartbeat_answer, only_send, \
    registration_answer


def test_start_sends_a_registration_with_the_brokers_identity() -> None:
    d = Driver()
    send = only_send(d.ready)
    assert send.api_key == BROKER_REGISTRATION
    r = send.request
    assert (int(r.broker_id), r.cluster_id, r.incarnation_id, r.rack, r.log_dirs) == (1, CLUSTER_ID, INCARNATION,
                                                                                     "r1", (LOG_DIR,))
    assert [(x.name, x.host, int(x.port)) for x in r.listeners] == [("PLAINTEXT", "localhost", 9092)]
    assert [(f.name, int(f.min_supported_version), int(f.max_supported_version)) for f in r.features] == [
        ("metadata.version", 7, 27)]
    assert d.lifecycle.state is BrokerState.STARTING


def test_request_timeout_is_at_most_half_the_session_kafka_14392() -> None:
    d = Driver(session_timeout_ms=9000, request_timeout_ms=30_000)
    assert only_send(d.ready).deadline_ms == d.now + 4500
    d2 = Driver(session_timeout_ms=9000, request_timeout_ms=1000)
    assert only_send(d2.ready).deadline_ms == d2.now + 1000


def test_successful_registration_sends_the_first_heartbeat_at_once_with_the_new_epoch() -> None:
    d = Driver()
    d.lifecycle.note_metadata_offset(17)
    send = only_send(d.answer(registration_answer(epoch=42)))
    assert send.api_key == BROKER_HEARTBEAT
    hb = send.request
    assert (int(hb.broker_epoch), int(hb.current_metadata_offset), hb.want_fence, hb.want_shut_down) == (
        42, 17, True, False)


def test_starting_broker_not_caught_up_heartbeats_again_after_10_ms() -> None:
    d = Driver()
    d.answer(registration_answer())
    ready = d.answer(heartbeat_answer(caught_up=False))
    assert ready.actions == () and ready.wakeup_ms == d.now + 10
    assert d.lifecycle.state is BrokerState.STARTING
    assert only_send(d.poll_wakeup()).api_key == BROKER_HEARTBEAT


def test_caught_up_moves_starting_to_recovery() -> None:
    d = Driver()
    d.answer(registration_answer())
    ready = d.answer(heartbeat_answer(caught_up=True))
    assert ready.actions == (StateChanged(BrokerState.STARTING, BrokerState.RECOVERY),)


def test_recovery_keeps_asking_to_stay_fenced_until_ready_to_unfence() -> None:
    d = Driver()
    d.answer(registration_answer())
    d.answer(heartbeat_answer(caught_up=True))
    assert only_send(d.poll_wakeup()).request.want_fence
    d.answer(heartbeat_answer(caught_up=True, fenced=True))
    assert d.lifecycle.state is BrokerState.RECOVERY
    assert d.ready.wakeup_ms == d.now + 2000
    send = only_send(d.lifecycle.set_ready_to_unfence(d.now + 5))  # not waiting for the interval
    assert send.request.want_fence is False


def test_ready_to_unfence_while_a_heartbeat_is_in_flight_sends_right_after_the_answer() -> None:
    d = Driver()
    d.answer(registration_answer())
    d.answer(heartbeat_answer(caught_up=True))
    d.poll_wakeup()
    assert d.lifecycle.set_ready_to_unfence(d.now).sends == ()
    send = only_send(d.answer(heartbeat_answer(caught_up=True, fenced=True), after_ms=3))
    assert send.request.want_fence is False


def test_unfenced_answer_moves_recovery_to_running_and_heartbeats_every_interval() -> None:
    d = Driver()
    d.to_running()
    d.answer(heartbeat_answer(caught_up=True, fenced=False))
    assert d.ready.wakeup_ms == d.now + 2000
    assert d.poll_at(d.now + 1999).sends == ()
    assert only_send(d.poll_at(d.now + 1)).api_key == BROKER_HEARTBEAT


def test_running_broker_fenced_by_the_controller_becomes_fenced_then_running_again() -> None:
    d = Driver()
    d.to_running()
    ready = d.answer(heartbeat_answer(caught_up=True, fenced=True))
    assert ready.actions == (StateChanged(BrokerState.RUNNING, BrokerState.FENCED),)
    d.poll_wakeup()
    ready = d.answer(heartbeat_answer(caught_up=True, fenced=False))
    assert ready.actions == (StateChanged(BrokerState.FENCED, BrokerState.RUNNING),)


def test_controlled_shutdown_heartbeats_want_shut_down_until_the_controller_agrees() -> None:
    d = Driver()
    d.to_running()
    d.answer(heartbeat_answer(caught_up=True, fenced=False))
    ready = d.lifecycle.begin_controlled_shutdown(d.now + 7)
    d.now += 7
    assert ready.actions[0] == StateChanged(BrokerState.RUNNING, BrokerState.PENDING_CONTROLLED_SHUTDOWN)
    d.last = only_send(ready)
    assert d.last.request.want_shut_down
    # The first "not yet" is followed 50 ms later, later ones after the usual interval.
    assert d.answer(heartbeat_answer(fenced=False)).wakeup_ms == d.now + 50
    d.poll_wakeup()
    assert d.answer(heartbeat_answer(fenced=False)).wakeup_ms == d.now + 2000
    d.poll_wakeup()
    ready = d.answer(heartbeat_answer(fenced=True, shut_down=True))
    assert ready.actions == (StateChanged(BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTTING_DOWN),
                             ShutdownComplete(True, "the controller allowed the controlled shutdown"))
    assert ready.wakeup_ms is None
    assert d.poll_at(d.now + 100_000).actions == ()


def test_controlled_shutdown_twice_is_one_shutdown() -> None:
    d = Driver()
    d.to_running()
    d.lifecycle.begin_controlled_shutdown(d.now)
    assert d.lifecycle.begin_controlled_shutdown(d.now).actions == ()


def test_shutdown_before_running_completes_at_once_without_the_controller() -> None:
    for steps in range(3):
        d = Driver()
        if steps >= 1:
            d.answer(registration_answer())
        if steps >= 2:
            d.answer(heartbeat_answer(caught_up=True))
        ready = d.lifecycle.begin_controlled_shutdown(d.now)
        assert ready.sends == ()
        assert isinstance(ready.actions[-1], ShutdownComplete) and ready.actions[-1].clean
        assert d.lifecycle.state is BrokerState.SHUTTING_DOWN


def test_fenced_broker_shuts_down_without_a_controlled_shutdown() -> None:
    d = Driver()
    d.to_running()
    d.answer(heartbeat_answer(fenced=True))
    ready = d.lifecycle.begin_controlled_shutdown(d.now)
    assert ready.actions[0] == StateChanged(BrokerState.FENCED, BrokerState.SHUTTING_DOWN)
