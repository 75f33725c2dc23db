"""The node's side of the one effect runner (raft/effect_runner.py): running the core's effects.

Its durability lane is the flusher (flusher.py), which stores quorum-state as `QuorumStateData` and tells the core
when the log is flushed (`FlushNotice`); the sink (`NodeEffects`) hands everything else over: sends to the
outbound channel, answers to the requests waiting for them (raft_rpcs.py), committed records and loaded snapshots to
the state machine, leader changes, the end of a graceful shutdown (closing.py). After every core input and poll
`NodeEffects.carry_out` runs the Ready, then what follows each input: the commit waiters (leader_appends.py), the
log's tail cache, the snapshot policy and the observers (trace, metrics, the controller host).

The ordering rules (persist first, then send; a leader's Fetch answer not waiting for its own flush; commits handed
over at once) are the runner's, shared with the simulator and the core's test harness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from pykraft.net.commit_probe import PROBE
from pykraft.raft import effect_runner
from pykraft.raft.client import RaftCore
from pykraft.raft.effect_runner import EffectSink, Outbox, OutboxStats
from pykraft.raft.effects import (
    CommitBatches,
    FlushLog,
    LeaderChanged,
    LoadSnapshot,
    PersistElection,
    Ready,
    Respond,
    Send,
    ShutdownComplete,
)
from pykraft.raft.states import Role
from pykraft.storage import QuorumStateData

from pykraft.node.runtime.core_task import Input
from pykraft.node.runtime.leader_appends import LeaderAppends
from pykraft.node.runtime.outbound import Outbound
from pykraft.node.runtime.raft_rpcs import RaftRpcs
from pykraft.node.runtime.snapshots import SnapshotPolicy
from pykraft.node.runtime.state_machine import StateMachine

__all__ = ["EffectRunner", "EffectSink", "FlushNotice", "Lane", "NodeEffects", "Outbox", "OutboxStats",
           "follows", "release_read"]


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


class FlushNotice:
    """The lane's `on_flushed`: a completed log flush becomes one core input, which reads the newest flushed offset
    when it runs (flushes completing meanwhile add nothing to the queue)."""

    def __init__(self, core: RaftCore, put: Callable[[Input], None]) -> None:
        self._core = core
        self._put = put
        self._queued = False

    def __call__(self) -> None:
        if self._queued:
            return
        self._queued = True
        self._put(self._flushed)

    def _flushed(self, now: int) -> Ready:
        self._queued = False
        return self._core.on_log_flushed(self._core.log.flushed_end_offset(), now)


def follows(core: RaftCore) -> bool:
    """Whether this node follows a leader now: its log flushes run on the loop (flusher.py says why)."""
    return core.quorum.role is Role.FOLLOWER


def release_read(log: Any, leader: Any, high_watermark: int | None, replayed: int | None = None) -> None:
    """The log keeps what was just appended in memory (disk.py) for its next readers. On a leader, its followers'
    fetches: what every other voter has fetched goes (one that lags or is gone leaves it to the cache's own
    bound, tail_cache.py). Elsewhere, the replay of committed records, which has read up to the high watermark, or
    only up to `replayed` (where it goes on from) while a follower's flush is under way: the core lists what became
    committed when that flush completes (RaftCore._follower_flush_due), and must not find it gone from memory."""
    if leader is None:
        if high_watermark is not None:
            log.release_cached_below(high_watermark if replayed is None else min(high_watermark, replayed))
        return
    ends = [p.end_offset for node_id, p in leader.voter_progress.items() if node_id != leader.local_key.id]
    if ends and None not in ends:
        log.release_cached_below(min(ends))


Observer = Callable[[RaftCore, int], None]


class NodeEffects:
    """The node's `EffectSink`, and what follows every core input (`carry_out`). `observers` is the runtime's list
    (hosts add theirs before the node starts); `on_shutdown_complete` is the stop sequence's (closing.py)."""

    def __init__(self, core: RaftCore, lane: Lane, outbox: Outbox, *, outbound: Outbound, rpcs: RaftRpcs,
                 appends: LeaderAppends, state_machine: StateMachine, snapshots: SnapshotPolicy,
                 clock: Callable[[], int], observers: list[Observer],
                 on_shutdown_complete: Callable[[ShutdownComplete], None]) -> None:
        self.core = core
        self.runner = EffectRunner(lane, outbox, self)
        self._outbound = outbound
        self._rpcs = rpcs
        self._appends = appends
        self._state_machine = state_machine
        self._snapshots = snapshots
        self._clock = clock
        self._observers = observers
        self._on_shutdown_complete = on_shutdown_complete
        self._probe_hwm: int | None = None
        self._released_at_hwm: int | None = None  # the high watermark when the log's tail cache was last trimmed

    def carry_out(self, ready: Ready | None, now: int) -> None:
        """The Ready of one core input or poll (None: the input gave none), then what follows every input."""
        if ready is not None:
            self.runner.run(ready)
        core = self.core
        leader = core.leader_state()
        if PROBE is not None and core.high_watermark != self._probe_hwm:
            self._probe_hwm = core.high_watermark
            PROBE.stamp("hwm", -1 if core.high_watermark is None else core.high_watermark)
        self._appends.check(core.high_watermark, leader.epoch if leader is not None else None)
        if core.high_watermark != self._released_at_hwm:
            self._released_at_hwm = core.high_watermark
            release_read(core.log, leader, core.high_watermark, core.listener.next_offset)
        self._snapshots.maybe_snapshot(core, self._state_machine, now)
        self._snapshots.maybe_clean(core.log, now)
        for observe in self._observers:
            observe(core, now)

    # ---- EffectSink: what the EffectRunner hands over ----------------------------------------------------------
    def transmit(self, send: Send) -> None:
        self._outbound.transmit(send)

    def respond(self, respond: Respond) -> None:
        self._rpcs.answer(respond)

    def commit(self, effect: CommitBatches) -> None:
        self._state_machine.apply(memoryview(effect.records), effect.base_offset, effect.last_offset)
        self._snapshots.on_commit(effect)

    def load_snapshot(self, effect: LoadSnapshot) -> None:
        reader = self.core.log.read_snapshot(effect.snapshot_id)
        assert reader is not None, f"the core asked to load a missing snapshot {effect.snapshot_id}"
        self._state_machine.load_snapshot(reader)
        self._snapshots.on_snapshot_loaded(effect.snapshot_id, self._clock())

    def leader_changed(self, effect: LeaderChanged) -> None:
        self._state_machine.leader_changed(effect.leader_id, effect.epoch)

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        self._on_shutdown_complete(effect)
