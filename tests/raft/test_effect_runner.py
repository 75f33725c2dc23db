"""The one effect runner (raft/effect_runner.py), pure: its ordering rules with a lane whose writes complete only
when the test says so. The node's flusher lane (tests/node/test_effects.py), the simulator's lane
(tests/sim/test_sim_lane.py) and the core's test harness (raft_context.py) all drive this runner."""

from __future__ import annotations

import pytest

from pykraft.raft.effect_runner import EffectRunner, Outbox, SequencedDurability
from pykraft.raft.effects import (
    CommitBatches, Destination, FlushLog, LeaderChanged, LoadSnapshot, PersistElection, Ready, Respond, Send,
    ShutdownComplete,
)
from pykraft.raft.election import ElectionState
from pykraft.raft.log import SnapshotId


class ManualLane(SequencedDurability):
    """Durable writes that complete when the test calls `complete`."""

    def __init__(self, outbox: Outbox) -> None:
        super().__init__(outbox.on_done)
        self.issued: list[tuple[str, int]] = []

    def flush_log(self, effect: FlushLog) -> int:
        seq = self.issue()
        self.issued.append(("flush", seq))
        return seq

    def persist_election(self, effect: PersistElection) -> int:
        seq = self.issue(election=True)
        self.issued.append(("persist", seq))
        return seq

    def complete_now(self, *seqs: int) -> None:
        self.complete(set(seqs))


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def transmit(self, send: Send) -> None:
        self.events.append(("send", send.correlation_id))

    def respond(self, respond: Respond) -> None:
        self.events.append(("respond", respond.ref))

    def commit(self, effect: CommitBatches) -> None:
        self.events.append(("commit", effect.last_offset))

    def load_snapshot(self, effect: LoadSnapshot) -> None:
        self.events.append(("load", effect.snapshot_id))

    def leader_changed(self, effect: LeaderChanged) -> None:
        self.events.append(("leader", effect.leader_id))

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        self.events.append(("shutdown", effect.graceful))


def build() -> tuple[ManualLane, Recorder, EffectRunner]:
    outbox, sink = Outbox(), Recorder()
    lane = ManualLane(outbox)
    return lane, sink, EffectRunner(lane, outbox, sink)


def send(correlation: int) -> Send:
    return Send(Destination(1, "127.0.0.1", 1), correlation, object())


def persist(epoch: int) -> PersistElection:
    return PersistElection(ElectionState(epoch), 0)


def commit(last: int) -> CommitBatches:
    return CommitBatches(b"", 0, last)


def test_messages_wait_for_every_durable_write_issued_before_them_and_leave_in_order() -> None:
    lane, sink, runner = build()
    runner.run(Ready((send(1), FlushLog(3), send(2), Respond("a", object()), persist(2), send(3)), 0))
    assert sink.events == [("send", 1)]
    lane.complete_now(2)  # the election write completes first: still behind the flush
    assert sink.events == [("send", 1)]
    lane.complete_now(1)
    assert sink.events == [("send", 1), ("send", 2), ("respond", "a"), ("send", 3)]


def test_a_leader_fetch_answer_skips_the_leaders_flush_but_not_an_election_write() -> None:
    lane, sink, runner = build()
    runner.run(Ready((FlushLog(3), Respond("fetch", object(), after_log_flush=False)), 0))
    assert sink.events == [("respond", "fetch")]
    runner.run(Ready((persist(3), Respond("fetch2", object(), after_log_flush=False)), 0))
    assert sink.events == [("respond", "fetch")]  # the new epoch is not durable yet
    lane.complete_now(1, 2)
    assert sink.events == [("respond", "fetch"), ("respond", "fetch2")]


def test_commits_snapshots_leader_changes_and_shutdown_are_handed_over_at_once() -> None:
    lane, sink, runner = build()
    effects = (FlushLog(9), commit(8), LoadSnapshot(SnapshotId(5, 1)), LeaderChanged(2, 4), ShutdownComplete(True))
    runner.run(Ready(effects, 0))
    assert sink.events == [("commit", 8), ("load", SnapshotId(5, 1)), ("leader", 2), ("shutdown", True)]
    assert lane.issued == [("flush", 1)]


def test_the_done_sequence_is_the_completed_prefix() -> None:
    done: list[int] = []
    sequence = SequencedDurability(done.append)
    first, second, third = sequence.issue(), sequence.issue(election=True), sequence.issue()
    assert sequence.last_election_seq == second and sequence.last_seq == third
    sequence.complete({third})
    assert done == [] and sequence.done_seq == 0
    sequence.complete({first})
    assert done == [1]
    sequence.complete({second})
    assert done == [1, 3]


def test_an_unknown_effect_is_a_loud_programming_error() -> None:
    _, _, runner = build()
    with pytest.raises(AssertionError, match="unknown effect"):
        runner.run(Ready(("not an effect",), 0))
