"""Persist first, then send: the outbox holds messages behind earlier durable writes; group commit coalesces."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.node.runtime.effects import EffectRunner, Outbox
from pykraft.node.runtime.flusher import DurabilityLane
from pykraft.raft.effects import (
    CommitBatches,
    Destination,
    FlushLog,
    LeaderChanged,
    PersistElection,
    Ready,
    Respond,
    Send,
    ShutdownComplete,
)
from pykraft.raft.election import ElectionState


class FakeTicket:
    def __init__(self, log: FakeLog, end: int) -> None:
        self.log, self.end_offset, self.synced = log, end, False

    def sync(self) -> None:
        self.synced = True


class FakeLog:
    def __init__(self) -> None:
        self.end = 0
        self.flushed = 0
        self.prepared: list[int] = []

    def prepare_flush(self) -> FakeTicket:
        self.prepared.append(self.end)
        return FakeTicket(self, self.end)

    def complete_flush(self, ticket: FakeTicket) -> None:
        assert ticket.synced
        self.flushed = max(self.flushed, ticket.end_offset)


class FakeStore:
    def __init__(self) -> None:
        self.written: list[object] = []

    def write(self, state: object) -> None:
        self.written.append(state)


class Gate:
    """A blocking-call runner that holds every call until the test releases it (an injected slow disk)."""

    def __init__(self) -> None:
        self.calls: list[asyncio.Future[None]] = []

    async def __call__(self, fn) -> None:
        future = asyncio.get_running_loop().create_future()
        self.calls.append(future)
        await future
        fn()

    def release_next(self) -> None:
        next(f for f in self.calls if not f.done()).set_result(None)


class Sink:
    def __init__(self, log: FakeLog) -> None:
        self.log = log
        self.events: list[tuple[str, object, int]] = []  # (kind, payload, flushed end when it happened)

    def transmit(self, send: Send) -> None:
        self.events.append(("send", send.correlation_id, self.log.flushed))

    def respond(self, respond: Respond) -> None:
        self.events.append(("respond", respond.ref, self.log.flushed))

    def commit(self, effect: CommitBatches) -> None:
        self.events.append(("commit", effect.last_offset, self.log.flushed))

    def load_snapshot(self, effect) -> None:
        self.events.append(("load", effect.snapshot_id, self.log.flushed))

    def leader_changed(self, effect: LeaderChanged) -> None:
        self.events.append(("leader", effect.leader_id, self.log.flushed))

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        self.events.append(("shutdown", effect.graceful, self.log.flushed))


def build():
    log, store, gate = FakeLog(), FakeStore(), Gate()
    outbox = Outbox()
    flushed: list[int] = []
    lane = DurabilityLane(log, store, on_done=outbox.on_done, on_flushed=lambda: flushed.append(log.flushed),
                          run_blocking=gate)
    sink = Sink(log)
    lane.start()
    return log, store, gate, lane, sink, EffectRunner(lane, outbox, sink), flushed


def send(correlation: int) -> Send:
    return Send(Destination(1, "127.0.0.1", 1), correlation, object())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_send_after_a_flush_waits_for_the_flush_to_complete():
    log, _, gate, lane, sink, runner, flushed = build()
    runner.run(Ready((send(1),), 0))
    assert sink.events == [("send", 1, 0)]  # nothing durable pending: out at once
    log.end = 5
    runner.run(Ready((FlushLog(5), send(2), Respond("r", object())), 0))
    await settle()
    assert [e[0] for e in sink.events] == ["send"]  # held: the fsync has not returned
    gate.release_next()
    await settle()
    assert sink.events[1:] == [("send", 2, 5), ("respond", "r", 5)]  # released after, in order, with the data durable
    assert flushed == [5]
    await lane.close()


@pytest.mark.asyncio
async def test_inputs_keep_flowing_while_a_flush_runs_and_later_flushes_coalesce():
    log, _, gate, lane, sink, runner, flushed = build()
    log.end = 1
    runner.run(Ready((FlushLog(1), send(1)), 0))
    await settle()
    for i in range(2, 6):  # four more appends+flushes while the first fsync is still running
        log.end = i
        runner.run(Ready((FlushLog(i), send(i)), 0))
    runner.run(Ready((CommitBatches(b"", 0, 0),), 0))  # not a message: applied at once, not held
    await settle()
    assert [e[0] for e in sink.events] == ["commit"]
    gate.release_next()
    await settle()
    assert [e[:2] for e in sink.events[1:]] == [("send", 1)]  # only what the first fsync covered
    gate.release_next()
    await settle()
    assert [e[1] for e in sink.events[1:]] == [1, 2, 3, 4, 5]
    assert log.prepared == [1, 5]  # five FlushLogs, two fsyncs (group commit)
    assert lane.stats.flush_requests == 5 and lane.stats.fsyncs == 2
    assert flushed == [1, 5]
    await lane.close()


@pytest.mark.asyncio
async def test_an_election_write_holds_later_messages_and_consecutive_writes_collapse():
    log, store, gate, lane, sink, runner, _ = build()
    state1, state2 = ElectionState(3, None, None), ElectionState(3, 2, None)
    runner.run(Ready((PersistElection(state1, 1), send(1)), 0))
    await settle()
    runner.run(Ready((PersistElection(state2, 1), send(2), LeaderChanged(2, 3)), 0))
    await settle()
    assert sink.events == [("leader", 2, 0)]
    gate.release_next()  # the first write (state1)
    await settle()
    assert [e[1] for e in sink.events if e[0] == "send"] == [1]
    gate.release_next()
    await settle()
    assert [e[1] for e in sink.events if e[0] == "send"] == [1, 2]
    assert [s.leader_epoch for s in store.written] == [3, 3] and store.written[-1].leader_id == 2
    await lane.close()


@pytest.mark.asyncio
async def test_a_flush_queued_behind_an_election_write_completes_in_order():
    log, store, gate, lane, sink, runner, _ = build()
    log.end = 2
    runner.run(Ready((FlushLog(2), PersistElection(ElectionState(4), 1), send(1), FlushLog(2), send(2)), 0))
    await settle()
    gate.release_next()  # one fsync covers both FlushLogs
    await settle()
    assert sink.events == []  # send 1 also waits for the election write issued before it
    gate.release_next()
    await settle()
    assert [e[1] for e in sink.events] == [1, 2]
    assert lane.stats.fsyncs == 1 and store.written[0].leader_epoch == 4
    await lane.close()


@pytest.mark.asyncio
async def test_a_failed_fsync_holds_every_later_message_forever():
    log, store, _, lane, sink, runner, _ = build()

    def broken(fn):
        raise OSError(5, "Input/output error")

    async def run_broken(fn):
        broken(fn)

    lane._run_flush = run_broken
    log.end = 1
    runner.run(Ready((FlushLog(1), send(1)), 0))
    await settle()
    assert sink.events == [] and isinstance(lane.failure, OSError)
    with pytest.raises(OSError):
        await lane.drain()
    await lane.close()


@pytest.mark.asyncio
async def test_a_leader_fetch_answer_overtakes_the_leaders_own_flush_but_never_an_election_write():
    log, _, gate, lane, sink, runner, _ = build()
    log.end = 3
    # the leader appended (FlushLog) and answers a parked Fetch with the new records: the answer leaves at once,
    # while a normal message emitted before it stays held behind the fsync
    runner.run(Ready((FlushLog(3), send(1), Respond("fetch", object(), after_log_flush=False)), 0))
    await settle()
    assert sink.events == [("respond", "fetch", 0)]
    gate.release_next()
    await settle()
    assert sink.events[1:] == [("send", 1, 3)]
    # a quorum-state write still holds such an answer until it is durable
    runner.run(Ready((PersistElection(ElectionState(5), 1), Respond("fetch2", object(), after_log_flush=False)), 0))
    await settle()
    assert [e[1] for e in sink.events] == ["fetch", 1]
    gate.release_next()
    await settle()
    assert [e[1] for e in sink.events] == ["fetch", 1, "fetch2"]
    await lane.close()


@pytest.mark.asyncio
async def test_held_messages_with_mixed_tags_leave_as_each_becomes_due_in_emission_order():
    log, store, gate, lane, sink, runner, _ = build()
    log.end = 1
    runner.run(Ready((PersistElection(ElectionState(6), 1), FlushLog(1), send(1),
                      Respond("fetch", object(), after_log_flush=False)), 0))
    await settle()
    assert sink.events == []
    gate.release_next()  # the election write: the Fetch answer is due, send 1 still waits for the fsync
    await settle()
    assert [e[1] for e in sink.events] == ["fetch"]
    gate.release_next()
    await settle()
    assert [e[1] for e in sink.events] == ["fetch", 1]
    await lane.close()
