"""The one effect runner: carries out the core's effects in order, with "persist first, then send".

The node (asyncio, a flusher thread, sockets), the simulator (a simulated disk and network) and the core's test
harness (in memory) all run the core's output through `EffectRunner`; each supplies only its I/O, as a
`DurabilityLane` (where durable writes go) and an `EffectSink` (everything else). The ordering rules live here
once, so the simulator's sweeps check the order the real node keeps:

- `PersistElection` / `FlushLog` go to the lane, which numbers them (1, 2, ...) and reports through
  `Outbox.on_done(seq)` when every operation up to `seq` has completed (it may complete them at once or later);
- `Send` / `Respond` go to the `Outbox` tagged with the lane's last number, and leave it only when every durable
  operation issued before them has completed. A `Respond` marked `after_log_flush=False` (a leader's Fetch
  answer) is tagged with the last quorum-state write instead, so it does not wait for the leader's own flush; it
  may then overtake held messages (to other peers: answers on one connection keep their order in the server).
  Among the other messages the tags never decrease, so they leave in the order the core emitted them;
- commit hand-off: `CommitBatches` / `LoadSnapshot` / `LeaderChanged` go to the sink at once (a committed batch
  is already durable on a majority; applying it locally needs no further wait);
- `ShutdownComplete` goes to the sink at once.

Telling the core that a flush completed (`RaftCore.on_log_flushed`) is an input like any other: the host feeds it
when its lane reports the flush, after the messages that waited for it were released.

Pure: no I/O, no clock, no asyncio; the simulator drives it event by event.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

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


class DurabilityLane(Protocol):
    """Durable writes, numbered in issue order; completion is reported to the outbox (`Outbox.on_done`)."""

    @property
    def last_seq(self) -> int: ...

    @property
    def last_election_seq(self) -> int: ...

    def flush_log(self, effect: FlushLog) -> int: ...

    def persist_election(self, effect: PersistElection) -> int: ...


class EffectSink(Protocol):
    """Where the runner hands everything that is not durability: the host implements it."""

    def transmit(self, send: Send) -> None: ...

    def respond(self, respond: Respond) -> None: ...

    def commit(self, effect: CommitBatches) -> None: ...

    def load_snapshot(self, effect: LoadSnapshot) -> None: ...

    def leader_changed(self, effect: LeaderChanged) -> None: ...

    def shutdown_complete(self, effect: ShutdownComplete) -> None: ...


@dataclass(slots=True)
class OutboxStats:
    sent: int = 0
    held: int = 0  # messages that had to wait for a durable write


class Outbox:
    """Messages waiting for the durable writes issued before them."""

    def __init__(self) -> None:
        self._queue: deque[tuple[int, Callable[[], None]]] = deque()
        self.done_seq = 0
        self.stats = OutboxStats()

    def put(self, required_seq: int, release: Callable[[], None]) -> None:
        if required_seq <= self.done_seq:  # a held message has a higher tag than this one: no order to keep
            self.stats.sent += 1
            release()
            return
        self.stats.held += 1
        self._queue.append((required_seq, release))

    def on_done(self, done_seq: int) -> None:
        self.done_seq = done_seq
        if not self._queue:
            return
        kept: deque[tuple[int, Callable[[], None]]] = deque()
        queue = self._queue
        self._queue = kept
        for entry in queue:  # tags are not monotonic once a Fetch answer is held: release every one now due
            if entry[0] <= done_seq:
                self.stats.sent += 1
                entry[1]()
            else:
                kept.append(entry)

    def __len__(self) -> int:
        return len(self._queue)


class SequencedDurability:
    """The numbering half of a lane, for hosts whose durable writes complete in the caller's own events (the
    simulator, the test harness): issue numbers, mark them complete, report the completed prefix to the outbox."""

    def __init__(self, on_done: Callable[[int], None]) -> None:
        self._on_done = on_done
        self._next_seq = 0
        self._last_election_seq = 0
        self._incomplete: list[int] = []  # issued, not completed, in issue order
        self.done_seq = 0

    @property
    def last_seq(self) -> int:
        return self._next_seq

    @property
    def last_election_seq(self) -> int:
        return self._last_election_seq

    def issue(self, election: bool = False) -> int:
        self._next_seq += 1
        self._incomplete.append(self._next_seq)
        if election:
            self._last_election_seq = self._next_seq
        return self._next_seq

    def complete(self, seqs: set[int] | frozenset[int]) -> None:
        self._incomplete = [seq for seq in self._incomplete if seq not in seqs]
        done = self._incomplete[0] - 1 if self._incomplete else self._next_seq
        if done != self.done_seq:
            self.done_seq = done
            self._on_done(done)


class EffectRunner:
    def __init__(self, lane: DurabilityLane, outbox: Outbox, sink: EffectSink) -> None:
        self.lane = lane
        self.outbox = outbox
        self.sink = sink
        self._dispatch: dict[type, Callable[[Any], object]] = {
            Send: self._send,
            Respond: self._respond,
            FlushLog: lane.flush_log,
            PersistElection: lane.persist_election,
            CommitBatches: sink.commit,
            LoadSnapshot: sink.load_snapshot,
            LeaderChanged: sink.leader_changed,
            ShutdownComplete: sink.shutdown_complete,
        }

    def run(self, ready: Ready) -> None:
        dispatch = self._dispatch
        for effect in ready.effects:
            handler = dispatch.get(type(effect))
            if handler is None:  # a new effect type no host knows: a programming error, loud in tests
                raise AssertionError(f"unknown effect {effect!r}")
            handler(effect)

    def _send(self, send: Send) -> None:
        self.outbox.put(self.lane.last_seq, _bind(self.sink.transmit, send))

    def _respond(self, respond: Respond) -> None:
        lane = self.lane
        required = lane.last_seq if respond.after_log_flush else lane.last_election_seq
        self.outbox.put(required, _bind(self.sink.respond, respond))


def _bind(fn: Callable[[Any], None], arg: Any) -> Callable[[], None]:
    return lambda: fn(arg)
