"""Carrying out the core's effects, in order, with "persist first, then send".

`EffectRunner.run(ready)` walks the effects of one input:
- `PersistElection` / `FlushLog` go to the durability lane (flusher.py) and return at once with a sequence number;
- `Send` / `Respond` go to the `Outbox` tagged with the lane's last sequence number, and leave it only when every
  durable operation issued before them has completed. A `Respond` marked `after_log_flush=False` (a leader's Fetch
  answer) is tagged with the last quorum-state write instead, so it does not wait for the leader's own fsync; it may
  then overtake held messages (to other peers: answers on one connection keep their order in the server). Among
  the other messages the tags never decrease, so they leave in the order the core emitted them;
- `CommitBatches` / `LoadSnapshot` / `LeaderChanged` go to the state machine and the runtime's observers at once
  (a committed batch is already durable on a majority; applying it locally needs no further wait);
- `ShutdownComplete` is reported to the runtime.
"""

from __future__ import annotations

import logging
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
from pykraft.storage import QuorumStateData

_log = logging.getLogger("pykraft.node")


class Lane(Protocol):
    done_seq: int

    @property
    def last_seq(self) -> int: ...

    @property
    def last_election_seq(self) -> int: ...

    def flush(self) -> int: ...

    def persist(self, state: QuorumStateData) -> int: ...


class EffectSink(Protocol):
    """Where the runner hands everything that is not durability: the runtime implements it."""

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
        queue, kept = self._queue, deque()
        self._queue = kept
        for entry in queue:  # tags are not monotonic once a Fetch answer is held: release every one now due
            if entry[0] <= done_seq:
                self.stats.sent += 1
                entry[1]()
            else:
                kept.append(entry)

    def __len__(self) -> int:
        return len(self._queue)


class EffectRunner:
    def __init__(self, lane: Lane, outbox: Outbox, sink: EffectSink) -> None:
        self.lane = lane
        self.outbox = outbox
        self.sink = sink

    def run(self, ready: Ready) -> None:
        lane, sink = self.lane, self.sink
        for effect in ready.effects:
            if isinstance(effect, Send):
                self.outbox.put(lane.last_seq, _bind(sink.transmit, effect))
            elif isinstance(effect, Respond):
                required = lane.last_seq if effect.after_log_flush else lane.last_election_seq
                self.outbox.put(required, _bind(sink.respond, effect))
            elif isinstance(effect, FlushLog):
                lane.flush()
            elif isinstance(effect, PersistElection):
                lane.persist(QuorumStateData.from_election(effect.state, effect.kraft_version))
            elif isinstance(effect, CommitBatches):
                sink.commit(effect)
            elif isinstance(effect, LoadSnapshot):
                sink.load_snapshot(effect)
            elif isinstance(effect, LeaderChanged):
                sink.leader_changed(effect)
            elif isinstance(effect, ShutdownComplete):
                sink.shutdown_complete(effect)
            else:  # a new effect type the runtime does not know: a programming error, loud in tests
                raise AssertionError(f"unknown effect {effect!r}")


def _bind(fn: Callable[[Any], None], arg: Any) -> Callable[[], None]:
    return lambda: fn(arg)
