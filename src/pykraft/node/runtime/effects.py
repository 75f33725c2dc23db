"""The node's side of the one effect runner (raft/effect_runner.py): its durability lane is the flusher thread
(flusher.py), which stores quorum-state as `QuorumStateData`; the runtime is the sink (sockets, state machine).

The ordering rules (persist first, then send; a leader's Fetch answer not waiting for its own flush; commits handed
over at once) are the runner's, shared with the simulator and the core's test harness.
"""

from __future__ import annotations

from typing import Protocol

from pykraft.raft import effect_runner
from pykraft.raft.effect_runner import EffectSink, Outbox, OutboxStats
from pykraft.raft.effects import FlushLog, PersistElection
from pykraft.storage import QuorumStateData

__all__ = ["EffectRunner", "EffectSink", "Lane", "Outbox", "OutboxStats"]


class Lane(Protocol):
    """What flusher.DurabilityLane offers: numbered durable writes of the node's own storage types."""

    done_seq: int

    @property
    def last_seq(self) -> int: ...

    @property
    def last_election_seq(self) -> int: ...

    def flush(self) -> int: ...

    def persist(self, state: QuorumStateData) -> int: ...


class StorageLane:
    """Adapts the flusher's lane to the runner's `DurabilityLane`: an election becomes the quorum-state file's
    record."""

    def __init__(self, lane: Lane) -> None:
        self.lane = lane

    @property
    def last_seq(self) -> int:
        return self.lane.last_seq

    @property
    def last_election_seq(self) -> int:
        return self.lane.last_election_seq

    def flush_log(self, effect: FlushLog) -> int:
        return self.lane.flush()

    def persist_election(self, effect: PersistElection) -> int:
        return self.lane.persist(QuorumStateData.from_election(effect.state, effect.kraft_version))


class EffectRunner(effect_runner.EffectRunner):
    """The runner over the node's flusher lane."""

    def __init__(self, lane: Lane, outbox: Outbox, sink: EffectSink) -> None:
        super().__init__(StorageLane(lane), outbox, sink)
