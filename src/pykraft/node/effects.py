"""Carrying out the core's effects, in order, with "persist first, then send".

`EffectRunner.run(ready)` walks the effects of one input:
- `PersistElection` / `FlushLog` go to the durability lane (flusher.py) and return at once with a sequence number;
- `Send` / `Respond` go to the `Outbox` tagged with the lane's last sequence number, and leave it only when every
  durable operation issued before them has completed (messages leave in the order the core emitted them: the
  tags never decrease, so a FIFO is enough);
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
        if not self._queue and required_seq <= self.done_seq:
            self.stats.sent += 1
            release()
            return
        self.stats.held += 1
        self._queue.append((required_seq, release))

    def on_done(self, done_seq: int) -> None:
        self.done_seq = done_seq
        while self._queue and self._queue[0][0] <= done_seq:
            _, release = self._queue.popleft()
            self.stats.sent += 1
            release()

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
                self.outbox.put(lane.last_seq, _bind(sink.respond, effect))
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
