"""BrokerComponents (broker/host.py): the action runner, timers and answer routing the node and the simulator share."""

from __future__ import annotations

import uuid

from pykraft.broker.actions import BrokerState, FindController, Ready, SendToController, StateChanged
from pykraft.broker.host import ISR, LIFECYCLE, BrokerComponents, controller_for


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def send_to_controller(self, component, send) -> None:
        self.calls.append(("send", component, send.request_id))

    def state_changed(self, change) -> None:
        self.calls.append(("state", change.new))

    def shutdown_complete(self, done) -> None:
        self.calls.append(("done", done.clean))

    def isr_change(self, change) -> None:
        self.calls.append(("isr-change",))

    def find_controller(self, component) -> None:
        self.calls.append(("find", component))

    def schedule(self, component, wakeup_ms) -> None:
        self.calls.append(("timer", component, wakeup_ms))


class Part:
    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def poll(self, now_ms: int) -> Ready:
        self.seen.append(("poll", now_ms))
        return Ready((FindController(),), 500)

    def handle_response(self, request_id: int, response: object, now_ms: int) -> Ready:
        self.seen.append(("answer", request_id, response))
        return Ready((), 100)

    def handle_failure(self, request_id: int, now_ms: int) -> Ready:
        self.seen.append(("failure", request_id))
        return Ready((), 100)


def test_actions_run_in_order_and_timers_only_when_they_change() -> None:
    sink, lifecycle, isr = Sink(), Part(), Part()
    host = BrokerComponents({LIFECYCLE: lifecycle, ISR: isr}, sink)
    send = SendToController(7, 62, object(), 3000)
    host.run(LIFECYCLE, Ready((StateChanged(BrokerState.STARTING, BrokerState.RECOVERY), send), 100))
    host.run(LIFECYCLE, Ready((), 100))  # the same wake-up: the timer stays
    assert sink.calls == [("state", BrokerState.RECOVERY), ("send", LIFECYCLE, 7), ("timer", LIFECYCLE, 100)]
    host.answer(LIFECYCLE, 7, "ok", 50)
    host.failed(ISR, 3, 60)
    assert lifecycle.seen == [("answer", 7, "ok")] and isr.seen == [("failure", 3)]  # routed by component
    assert sink.calls[-1] == ("timer", ISR, 100)
    host.poll(LIFECYCLE, 100)  # fired: the next one is set again
    assert sink.calls[-2:] == [("find", LIFECYCLE), ("timer", LIFECYCLE, 500)]
    host.replace(ISR, Part())
    assert host.wakeups[ISR] is None


def test_requests_go_to_the_raft_leader() -> None:
    assert controller_for(2, {1: "a", 2: "b"}) == "b"
    assert controller_for(None, {1: "a"}) is None
    assert controller_for(uuid.uuid4().int, {1: "a"}) is None
