"""The simulated node's durability lane for the one effect runner (raft/effect_runner.py).

- A quorum-state write is atomic and immediate on the simulated disk, so the persisted epoch always equals the
  in-memory one; it completes at once (but the outbox still releases in order: a message tagged after it waits for
  any flush issued before it, as on the real node).
- A log flush takes a drawn latency (0..flush_latency_max_ms). Flushes run one round at a time, like the node's
  flusher: a round covers the flushes issued before it started; flushes issued during it wait for the next round,
  which starts when it ends. At the end of a round the disk flushes and the lane reports the new completed prefix;
  the node then tells the core (`on_log_flushed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.effect_runner import Outbox, SequencedDurability
from pykraft.raft.effects import FlushLog, PersistElection

if TYPE_CHECKING:
    from pykraft.sim.engine.node import SimNode


class SimLane(SequencedDurability):
    def __init__(self, node: SimNode, outbox: Outbox) -> None:
        super().__init__(outbox.on_done)
        self.node = node
        self.waiting: list[int] = []  # flushes issued, not yet in a round
        self.in_round: set[int] = set()  # the flushes the round in flight covers

    @property
    def flushing(self) -> bool:
        return bool(self.in_round)

    def persist_election(self, effect: PersistElection) -> int:
        node = self.node
        node.disk.persist(effect.state)
        node.world.checker.on_persist(node, effect.state)
        seq = self.issue(election=True)
        self.complete({seq})
        return seq

    def flush_log(self, effect: FlushLog) -> int:
        seq = self.issue()
        self.waiting.append(seq)
        if not self.in_round:
            self._start_round()
        return seq

    def _start_round(self) -> None:
        node = self.node
        self.in_round, self.waiting = set(self.waiting), []
        latency = node.rng.randint(0, node.world.params.flush_latency_max_ms)
        node.world.scheduler.after(latency, node.on_flush_event, node.incarnation)

    def finish_round(self) -> None:
        """The round's flush reached the disk: complete its flushes (releasing what waited), start the next."""
        self.node.disk.log.flush()
        covered, self.in_round = self.in_round, set()
        if self.waiting:
            self._start_round()
        self.complete(covered)

    def flush_everything(self) -> None:
        """A clean stop: the disk flushes everything and every issued operation completes."""
        self.node.disk.log.flush()
        covered = self.in_round | set(self.waiting)
        self.in_round, self.waiting = set(), []
        self.complete(covered)
