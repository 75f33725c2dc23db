"""The durability lane's log flush on the event loop while the node follows (flusher.py `sync_inline`): the
worker-thread runner is not used, messages still wait for the fsync, and a leader's flush still goes through it."""

from __future__ import annotations

import pytest

from pykraft.node.runtime.effects import EffectRunner, Outbox
from pykraft.node.runtime.flusher import DurabilityLane
from pykraft.raft.effects import FlushLog, Ready

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
    assert sink.events == []  # the lane runs on its own task: the Send waits for it
    await settle()
    assert gate.calls == []  # no worker-thread hand-over
    assert sink.events == [("send", 1, 3)]  # out once the data is durable
    follows[0] = False  # now leading: the worker thread again
    log.end = 5
    runner.run(Ready((FlushLog(5), send(2)), 0))
    await settle()
    assert len(gate.calls) == 1 and sink.events[1:] == []
    gate.release_next()
    await settle()
    assert sink.events[1:] == [("send", 2, 5)]
    await lane.close()
