"""BrokerLifecycle: every error answer, timeouts, lost requests, and arbitrary input never breaking the table."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.broker.actions import BrokerState, FindController, ShutdownComplete, StateChanged
from pykraft.broker.lifecycle import BROKER_HEARTBEAT, BROKER_REGISTRATION, TRANSITIONS
from pykraft.protocol.errors import ErrorCode

from .lifecycle_helpers import INCARNATION, Driver, heartbeat_answer, only_send, registration_answer


def test_not_controller_on_registration_finds_the_controller_and_resends_at_once() -> None:
    d = Driver()
    ready = d.answer(registration_answer(ErrorCode.NOT_CONTROLLER))
    assert ready.actions[0] == FindController()
    assert only_send(ready).api_key == BROKER_REGISTRATION


def test_repeated_not_controller_backs_off() -> None:
    d = Driver()
    d.answer(registration_answer(ErrorCode.NOT_CONTROLLER))
    ready = d.answer(registration_answer(ErrorCode.NOT_CONTROLLER))
    assert ready.sends == () and ready.wakeup_ms == d.now + 100


def test_not_controller_on_heartbeat_resends_the_heartbeat_at_once() -> None:
    d = Driver()
    d.to_running()
    ready = d.answer(heartbeat_answer(ErrorCode.NOT_CONTROLLER))
    assert ready.actions[0] == FindController()
    assert only_send(ready).api_key == BROKER_HEARTBEAT
    assert d.lifecycle.state is BrokerState.RUNNING


def test_stale_broker_epoch_re_registers_with_the_same_incarnation_then_uses_the_new_epoch() -> None:
    d = Driver()
    d.to_running()
    send = only_send(d.answer(heartbeat_answer(ErrorCode.STALE_BROKER_EPOCH)))
    assert send.api_key == BROKER_REGISTRATION and send.request.incarnation_id == INCARNATION
    heartbeat = only_send(d.answer(registration_answer(epoch=77)))
    assert int(heartbeat.request.broker_epoch) == 77


def test_duplicate_registration_retries_with_exponential_backoff() -> None:
    d = Driver()
    waits = []
    for _ in range(4):
        ready = d.answer(registration_answer(ErrorCode.DUPLICATE_BROKER_REGISTRATION))
        assert ready.sends == ()
        waits.append(ready.wakeup_ms - d.now)
        assert only_send(d.poll_wakeup()).api_key == BROKER_REGISTRATION
    assert waits == [100, 200, 400, 800]


def test_backoff_is_capped_at_half_the_session() -> None:
    d = Driver(session_timeout_ms=1000)
    waits = []
    for _ in range(5):
        waits.append(d.answer(registration_answer(ErrorCode.DUPLICATE_BROKER_REGISTRATION)).wakeup_ms - d.now)
        d.poll_wakeup()
    assert waits == [100, 200, 400, 500, 500]


def test_registration_gives_up_at_the_initial_registration_timeout_with_the_last_error() -> None:
    d = Driver(initial_registration_timeout_ms=1000)
    start = d.now
    final = None
    while d.lifecycle.state is BrokerState.STARTING:
        if d.ready.sends:
            d.answer(registration_answer(ErrorCode.DUPLICATE_BROKER_REGISTRATION))
        final = d.poll_wakeup() if d.lifecycle.state is BrokerState.STARTING else d.ready
    assert d.now == start + 1000
    assert final is not None and final.actions[0] == StateChanged(BrokerState.STARTING, BrokerState.SHUTTING_DOWN)
    done = final.actions[-1]
    assert isinstance(done, ShutdownComplete) and not done.clean
    assert "initial.broker.registration.timeout.ms" in done.reason
    assert "DUPLICATE_BROKER_REGISTRATION" in done.reason
    assert final.wakeup_ms is None


def test_registration_deadline_is_the_wakeup_while_an_answer_is_slow() -> None:
    d = Driver(initial_registration_timeout_ms=1000, request_timeout_ms=5000)
    assert d.ready.wakeup_ms == d.now + 1000


def test_heartbeat_timeout_finds_the_controller_and_retries_after_a_backoff() -> None:
    d = Driver()
    d.to_running()
    d.answer(heartbeat_answer(fenced=False))
    sent = only_send(d.poll_wakeup())
    ready = d.poll_at(sent.deadline_ms)
    assert ready.actions == (FindController(),)
    assert ready.wakeup_ms == d.now + 100
    # The answer to the request we gave up on changes nothing.
    late = d.lifecycle.handle_response(sent.request_id, heartbeat_answer(fenced=True), d.now + 1)
    assert late.actions == () and d.lifecycle.state is BrokerState.RUNNING


def test_undeliverable_request_is_retried_after_a_backoff() -> None:
    d = Driver()
    ready = d.lifecycle.handle_failure(d.last.request_id, d.now)
    assert ready.sends == () and ready.wakeup_ms == d.now + 100
    assert only_send(d.poll_wakeup()).api_key == BROKER_REGISTRATION


def test_other_heartbeat_errors_back_off_and_keep_the_state() -> None:
    d = Driver()
    d.to_running()
    ready = d.answer(heartbeat_answer(ErrorCode.UNKNOWN_SERVER_ERROR, fenced=True))
    assert ready.actions == () and ready.wakeup_ms == d.now + 100
    assert d.lifecycle.state is BrokerState.RUNNING


def test_answer_of_the_wrong_type_is_a_failure_not_a_crash() -> None:
    d = Driver()
    ready = d.answer(heartbeat_answer())  # a heartbeat answer to a registration
    assert ready.sends == () and not d.lifecycle.registered


_inputs = st.lists(st.one_of(
    st.tuples(st.just("answer"), st.sampled_from(["reg", "hb"]),
              st.sampled_from([0, 41, 77, 101, -1, 104, 9999]), st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("poll"), st.integers(0, 10_000)),
    st.tuples(st.just("unfence")), st.tuples(st.just("shutdown")), st.tuples(st.just("fail"))), max_size=40)


class _Odd:
    """An answer object with an error code no Kafka version defines."""

    def __init__(self, api_key: int, code: int) -> None:
        self.__api_key__ = api_key
        self.error_code = code


@settings(max_examples=150, deadline=None)
@given(_inputs)
def test_arbitrary_inputs_only_make_transitions_in_the_table(steps) -> None:
    d = Driver()
    for step in steps:
        old = d.lifecycle.state
        if step[0] == "answer":
            _, kind, code, a, b, c = step
            if code == 9999:
                response = _Odd(BROKER_REGISTRATION if kind == "reg" else BROKER_HEARTBEAT, code)
            elif kind == "reg":
                response = registration_answer(ErrorCode(code))
            else:
                response = heartbeat_answer(ErrorCode(code), caught_up=a, fenced=b, shut_down=c)
            ready = d.answer(response)
        elif step[0] == "poll":
            ready = d.poll_at(d.now + step[1])
        elif step[0] == "unfence":
            ready = d.lifecycle.set_ready_to_unfence(d.now)
        elif step[0] == "shutdown":
            ready = d.lifecycle.begin_controlled_shutdown(d.now)
        else:
            ready = d.lifecycle.handle_failure(d.last.request_id, d.now)
        for action in ready.actions:
            if isinstance(action, StateChanged):
                assert action.old is old and action.new in TRANSITIONS[old]
                old = action.new
        assert len(ready.sends) <= 1
        assert (ready.wakeup_ms is None) == (d.lifecycle.state is BrokerState.SHUTTING_DOWN)
