"""The simulator's durability lane under the one effect runner: quorum-state writes complete at once, log flushes
after a drawn latency, one round at a time (a flush issued during a round waits for the next one, as on the node's
flusher), and what waited for a flush leaves only when its round ends."""

from __future__ import annotations

import random
from types import SimpleNamespace

from pykraft.raft.effect_runner import EffectRunner, Outbox
from pykraft.raft.effects import Destination, FlushLog, PersistElection, Ready, Send
from pykraft.raft.election import ElectionState
from pykraft.sim.engine.durability import SimLane
from pykraft.sim.engine.scheduler import Scheduler


class FakeNode:
    """What SimLane uses of a SimNode: the disk, the world's scheduler and checker, the node's random stream."""

    def __init__(self) -> None:
        self.persisted: list[ElectionState] = []
        self.flushes = 0
        self.incarnation = 1
        self.sent: list[int] = []
        self.rng = random.Random(0)
        log = SimpleNamespace(flush=self._flush)
        self.disk = SimpleNamespace(persist=self.persisted.append, log=log)
        checker = SimpleNamespace(on_persist=lambda node, state: None)
        self.world = SimpleNamespace(scheduler=Scheduler(None), checker=checker,
                                     params=SimpleNamespace(flush_latency_max_ms=5))
        self.outbox = Outbox()
        self.lane = SimLane(self, self.outbox)
        self.runner = EffectRunner(self.lane, self.outbox, self)

    def _flush(self) -> None:
        self.flushes += 1

    def on_flush_event(self, incarnation: int) -> tuple[int, str, str]:
        self.lane.finish_round()
        return 0, "flushed", ""

    def transmit(self, send: Send) -> None:
        self.sent.append(send.correlation_id)

    respond = commit = load_snapshot = leader_changed = shutdown_complete = transmit  # unused here


def send(correlation: int) -> Send:
    return Send(Destination(1, "127.0.0.1", 1), correlation, object())


def run_next_event(node: FakeNode) -> None:
    assert node.world.scheduler.step(), "no event was scheduled"


def test_a_send_after_a_flush_leaves_when_the_flush_round_ends() -> None:
    node = FakeNode()
    node.runner.run(Ready((FlushLog(1), send(1)), 0))
    assert node.sent == [] and node.lane.flushing
    run_next_event(node)
    assert node.sent == [1] and node.flushes == 1 and not node.lane.flushing


def test_a_flush_issued_during_a_round_waits_for_the_next_round() -> None:
    node = FakeNode()
    node.runner.run(Ready((FlushLog(1), send(1)), 0))
    node.runner.run(Ready((FlushLog(2), send(2)), 0))
    run_next_event(node)
    assert node.sent == [1] and node.lane.flushing  # the second round started when the first ended
    run_next_event(node)
    assert node.sent == [1, 2] and node.flushes == 2


def test_an_election_write_is_on_disk_at_once_but_does_not_overtake_an_earlier_flush() -> None:
    node = FakeNode()
    node.runner.run(Ready((FlushLog(1), PersistElection(ElectionState(3), 0), send(1)), 0))
    assert node.persisted == [ElectionState(3)] and node.sent == []
    run_next_event(node)
    assert node.sent == [1]


def test_a_clean_stop_flushes_and_releases_everything() -> None:
    node = FakeNode()
    node.runner.run(Ready((FlushLog(1), send(1)), 0))
    node.runner.run(Ready((FlushLog(2), send(2)), 0))
    node.lane.flush_everything()
    assert node.sent == [1, 2] and not node.lane.flushing
