"""IsrManager under arbitrary interleavings of progress, metadata, timers and controller answers (hypothesis).

Invariants after every input: never more than one AlterPartition in flight; every proposal keeps the leader,
stays within the replicas and only adds replicas the cache showed eligible when it was sent; the maximal ISR
contains the committed ISR; the high watermark never exceeds the leader's log end and never goes back within
one leadership."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.broker.actions import SendToController
from pykraft.controller.cluster import FENCE, IN_CONTROLLED_SHUTDOWN, UNFENCE
from pykraft.protocol.errors import ErrorCode

from .isr_helpers import EPOCHS, ME, Leader, answer, tp
from .records import change, isr_change, register

CODES = [ErrorCode.NONE, ErrorCode.INELIGIBLE_REPLICA, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_CONTROLLER,
         ErrorCode.INVALID_UPDATE_VERSION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.REQUEST_TIMED_OUT]

_step = st.one_of(
    st.tuples(st.just("progress"), st.integers(0, 3), st.integers(0, 50), st.integers(0, 50), st.booleans()),
    st.tuples(st.just("poll"), st.integers(0, 40_000)),
    st.tuples(st.just("answer"), st.sampled_from(CODES), st.sampled_from(CODES), st.booleans()),
    st.tuples(st.just("fail")),
    st.tuples(st.just("broker"), st.sampled_from([2, 3]), st.sampled_from(["fence", "unfence", "shutdown", "new"])),
    st.tuples(st.just("isr"), st.integers(0, 1), st.sampled_from([[1], [1, 2], [1, 3], [1, 2, 3]]), st.booleans()),
)


class Model:
    def __init__(self) -> None:
        self.leader = Leader(partitions=2, isr=[1, 2])
        self.leo = 100
        self.in_flight: SendToController | None = None
        self.epochs = dict(EPOCHS)
        self.incarnation = {2: 1, 3: 1}
        self.hwm: dict = {}
        self.expansions_sent = 0

    def check(self, ready) -> None:
        sends = ready.sends
        assert len(sends) <= 1
        if sends:
            assert self.in_flight is None, "a second AlterPartition while one is in flight"
            self.in_flight = sends[0]
            cache = self.leader.cache
            for t in sends[0].request.topics:
                for p in t.partitions:
                    key = (t.topic_id, int(p.partition_index))
                    members = [int(b.broker_id) for b in p.new_isr_with_epochs]
                    assert ME in members and set(members) <= set(cache.partition(*key).replicas)
                    for b in self.leader.manager.proposal(key).added:
                        assert cache.is_isr_eligible(b, -1), f"ineligible {b} proposed"
                        self.expansions_sent += 1
        manager = self.leader.manager
        for key in manager.led_partitions():
            committed = manager.committed(key)
            assert set(committed.isr) <= set(manager.maximal_isr(key))
            hwm = manager.high_watermark(key)
            if hwm is not None:
                assert hwm <= self.leo
                previous = self.hwm.get((key, committed.leader_epoch))
                assert previous is None or hwm >= previous
                self.hwm[(key, committed.leader_epoch)] = hwm

    def run(self, step) -> None:
        leader = self.leader
        kind = step[0]
        if kind == "progress":
            _, grow, lag2, lag3, late = step
            self.leo += grow
            caught = leader.now - (40_000 if late else 0)
            ready = leader.progress(self.leo, {2: (self.leo - lag2, caught), 3: (self.leo - lag3, caught)},
                                    partitions=[0, 1], epochs=self.epochs)
        elif kind == "poll":
            ready = leader.poll(leader.now + step[1])
            if self.in_flight is not None and leader.now >= self.in_flight.deadline_ms:
                self.in_flight = None
        elif kind == "answer" and self.in_flight is not None:
            _, code0, code1, top_error = step
            send, self.in_flight = self.in_flight, None
            response = answer(send, {tp(0): code0, tp(1): code1},
                              top=ErrorCode.NOT_CONTROLLER if top_error else ErrorCode.NONE)
            ready = leader.respond(send, response)
        elif kind == "fail" and self.in_flight is not None:
            send, self.in_flight = self.in_flight, None
            ready = leader.manager.handle_failure(send.request_id, leader.now)
        elif kind == "broker":
            ready = self._broker_change(step[1], step[2])
        elif kind == "isr":
            _, pid, isr, new_leader_epoch = step
            leader.apply(isr_change(pid, isr, leader=ME if new_leader_epoch else None))
            ready = leader.sync()
        else:
            return
        self.check(ready)

    def _broker_change(self, broker: int, what: str):
        leader = self.leader
        epoch = self.epochs[broker]
        if what == "fence":
            leader.apply(change(broker, epoch, fenced=FENCE))
        elif what == "unfence":
            leader.apply(change(broker, epoch, fenced=UNFENCE))
        elif what == "shutdown":
            leader.apply(change(broker, epoch, shutting_down=IN_CONTROLLED_SHUTDOWN))
        else:
            self.incarnation[broker] += 1
            self.epochs[broker] = leader.offset
            leader.apply(register(broker, leader.offset, incarnation=self.incarnation[broker]))
        return leader.sync()


@settings(max_examples=200, deadline=None)
@given(st.lists(_step, max_size=40))
def test_isr_manager_invariants_hold_under_arbitrary_inputs(steps) -> None:
    model = Model()
    for step in steps:
        model.run(step)
