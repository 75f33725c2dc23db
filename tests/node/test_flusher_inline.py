"""The durability lane's log flush on the event loop while the node follows (flusher.py `sync_inline`): the
worker-thread runner is not used, messages still wait for the fsync, and a leader's flush still goes through it.
With nothing queued ahead, a follower's flush is synced inside the FlushLog effect itself, before the rest of the
Ready (committed records for the state machine, the next Fetch) is carried out."""

from __future__ import annotations

import pytest

from pykraft.node.runtime.effects import EffectRunner, Outbox
from pykraft.node.runtime.flusher import DurabilityLane, on_loop_after_answers
from pykraft.raft.effects import CommitBatches, FlushLog, Ready, Respond

from .test_effects import FakeLog, FakeStore, Gate, Sink, send, settle


def build(follows: list[bool]):
    log, gate, outbox = FakeLog(), Gate(), Outbox()
    lane = DurabilityLane(log, FakeStore(), on_done=outbox.on_done, on_flushed=lambda: None, run_blocking=gate,
                          sync_inline=lambda: follows[0])
    sink = Sink(log)
    lane.start()
    return log, gate, lane, sink, EffectRunner(lane, outbox, sink)


@pytest.mark.asyncio
async def test_a_follower_syncs_on_the_loop_and_still_sends_only_after_the_sync():
    follows = [True]
    log, gate, lane, sink, runner = build(follows)
    log.end = 3
    runner.run(Ready((FlushLog(3), send(1)), 0))
    assert gate.calls == []  # no worker-thread hand-over
    assert sink.events == [("send", 1, 3)]  # synced inside the FlushLog effect: the Send leaves durable data behind
    await settle()
    assert sink.events == [("send", 1, 3)]
    follows[0] = False  # now leading: the worker thread again
    log.end = 5
    runner.run(Ready((FlushLog(5), send(2)), 0))
    await settle()
    assert len(gate.calls) == 1 and sink.events[1:] == []
    gate.release_next()
    await settle()
    assert sink.events[1:] == [("send", 2, 5)]
    await lane.close()


@pytest.mark.asyncio
async def test_a_follower_starts_its_fsync_before_handing_committed_records_over():
    follows = [True]
    flushed_calls: list[int] = []
    log, gate, outbox = FakeLog(), Gate(), Outbox()
    lane = DurabilityLane(log, FakeStore(), on_done=outbox.on_done, on_flushed=lambda: flushed_calls.append(1),
                          run_blocking=gate, sync_inline=lambda: follows[0])
    sink = Sink(log)
    lane.start()
    runner = EffectRunner(lane, outbox, sink)
    log.end = 7
    runner.run(Ready((FlushLog(7), send(1), CommitBatches(b"", 3, 4)), 0))
    # The commit hand-off (the state machine's replay) no longer runs between the flush request and the fsync.
    assert sink.events == [("send", 1, 7), ("commit", 4, 7)]
    assert lane.done_seq == 1 and lane.stats.fsyncs == 1 and flushed_calls == [1]
    await lane.close()


@pytest.mark.asyncio
async def test_a_follower_flush_behind_queued_work_keeps_the_lanes_order():
    follows = [False]
    log, gate, lane, sink, runner = build(follows)
    log.end = 2
    runner.run(Ready((FlushLog(2), send(1)), 0))  # a leader's flush, stuck in the worker thread
    await settle()
    follows[0] = True  # the node now follows, the earlier flush still in flight
    log.end = 4
    runner.run(Ready((FlushLog(4), send(2)), 0))
    await settle()
    assert sink.events == [] and log.prepared == [2]  # not synced ahead of the queued flush
    gate.release_next()
    await settle()
    assert sink.events == [("send", 1, 2), ("send", 2, 4)]  # in order, each after its data is durable
    assert lane.done_seq == 2
    await lane.close()


@pytest.mark.asyncio
async def test_a_leaders_flush_runs_on_the_loop_after_its_fetch_answer_leaves():
    """The runtime's `run_flush`: no worker thread for a log flush; the Fetch answer leaves first, a message that
    needs the data durable waits for the fsync, which runs within a few loop turns."""
    log, gate, outbox = FakeLog(), Gate(), Outbox()
    lane = DurabilityLane(log, FakeStore(), on_done=outbox.on_done, on_flushed=lambda: None, run_blocking=gate,
                          run_flush=on_loop_after_answers, sync_inline=lambda: False)
    sink = Sink(log)
    lane.start()
    runner = EffectRunner(lane, outbox, sink)
    log.end = 3
    runner.run(Ready((FlushLog(3), send(1), Respond("fetch", object(), after_log_flush=False)), 0))
    assert sink.events == [("respond", "fetch", 0)] and log.flushed == 0  # not synced inside the effect
    await settle()
    assert gate.calls == [] and log.flushed == 3 and lane.stats.fsyncs == 1
    assert sink.events[1:] == [("send", 1, 3)]
    await lane.close()
