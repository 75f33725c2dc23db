"""The durability lane: quorum-state writes and log flushes, in order, with group commit.

Every durable operation the core asks for (`PersistElection`, `FlushLog`) gets a sequence number when its effect
is executed. The lane performs them in order in one asyncio task; the four fsyncs of a quorum-state write run
through `run_blocking` (a worker thread by default) so the event loop keeps reading and processing inputs
meanwhile, and a log flush runs as described below. `done_seq` is the highest number such that every operation
up to it has completed: the outbox (effects.py) releases a Send or Respond only when `done_seq` reaches the last
durable operation issued before it ("persist first, then send").

Group commit: when a flush reaches the head of the lane, `FileLog.prepare_flush()` captures everything appended so
far, so the one fsync also covers every later `FlushLog` already queued; all of them complete together. Several
queued quorum-state writes in a row collapse into one write of the newest state (the file holds one state; only
the last one matters). Flushing data earlier than asked is always safe.

A log flush goes through `run_flush` (by default `run_blocking`). The node's runtime gives it
`on_loop_after_answers`: the fsync runs on the event loop two turns after it was asked for, once the Fetch answers
released by the same append are written. The worker thread's hand-overs cost more than they overlapped: measured
idle with benchmarks/commit_timeline.py, 0.45-0.7 ms (p50) from submitting the fsync to the thread starting it
(the woken thread waits for a core: the followers' processes run just then) and 0.1-0.2 ms back to the loop, so
the leader's own fsync was on the commit path half the time. On the loop it finishes long before the followers'
next Fetch arrives, and benchmarks/quorum.py's linger-0 commit p50 went from 2.4-2.8 to 1.6-1.7 ms with the same
throughput. Kafka's raft client also flushes on its one thread. Quorum-state writes stay in the worker thread.

`sync_inline()` (the runtime's: "this node follows") makes a log flush run at once on the loop: a follower has
nothing to overlap with its fsync (its next Fetch waits for it), and the two thread hand-overs around it cost more
than the fsync itself on a busy machine (measured: ~0.2-1.2 ms each way under load, ~40 us idle). When nothing is
queued ahead of a follower's flush it is synced inside its FlushLog effect (`_flush_now`), before the rest of that
Ready is carried out (the core lists committed records after the flush; their replay used to delay the fsync) and
before the loop turns: asked-to-started went from p50 0.10 / p99 0.99 ms to 0.007 / 0.015 ms under load.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pykraft.net.commit_probe import PROBE
from pykraft.storage import QuorumStateData

_log = logging.getLogger("pykraft.node")

RunBlocking = Callable[[Callable[[], None]], Awaitable[None]]


def thread_runner() -> RunBlocking:
    """Run a blocking call in the loop's default executor (a worker thread)."""

    async def run(fn: Callable[[], None]) -> None:
        await asyncio.get_running_loop().run_in_executor(None, fn)

    return run


async def on_loop_after_answers(fn: Callable[[], None]) -> None:
    """Run a blocking call on the event loop two turns from now (see the module doc). A Fetch answer that the same
    Ready released is written two turns after its future is set (the handler task's step, then the server's done
    callback that writes it), so the fsync starts after the answers are on the wire."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    fn()


@dataclass(frozen=True, slots=True)
class _Op:
    seq: int
    state: QuorumStateData | None  # None: a log flush


@dataclass(slots=True)
class LaneStats:
    flush_requests: int = 0  # FlushLog effects seen
    fsyncs: int = 0  # flush tickets actually synced (group commit: fewer than flush_requests)
    election_writes: int = 0
    election_requests: int = 0


class DurabilityLane:
    """Orders and performs durable writes. `log` needs prepare_flush/complete_flush; `store` needs write."""

    def __init__(self, log: Any, store: Any, *, on_done: Callable[[int], None],
                 on_flushed: Callable[[], None], run_blocking: RunBlocking | None = None,
                 run_flush: RunBlocking | None = None, sync_inline: Callable[[], bool] | None = None) -> None:
        self._log = log
        self._store = store
        self._on_done = on_done  # called with the new done_seq
        self._on_flushed = on_flushed  # a flush completed: tell the core (via its input queue)
        self._run_blocking = run_blocking or thread_runner()
        self._run_flush = run_flush or self._run_blocking  # a log flush that is not synced at once (module doc)
        self._sync_inline = sync_inline  # asked before each log flush: run it on the loop (see the module doc)
        self._pending: deque[_Op] = deque()
        self._completed: set[int] = set()
        self._next_seq = 0
        self._last_election_seq = 0
        self.done_seq = 0
        self.stats = LaneStats()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.failure: BaseException | None = None

    @property
    def last_seq(self) -> int:
        """The number of the last durable operation issued (what a message sent now must wait for)."""
        return self._next_seq

    @property
    def last_election_seq(self) -> int:
        """The number of the last quorum-state write issued (what a message that needs no log flush waits for)."""
        return self._last_election_seq

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="pykraft-durability")

    def flush(self) -> int:
        self.stats.flush_requests += 1
        if self._idle.is_set() and self._sync_inline is not None and self._sync_inline():
            return self._flush_now()
        return self._issue(None)

    def _flush_now(self) -> int:
        """A follower's flush with nothing queued ahead of it: synced here, inside the effect that asked for it,
        so it starts before the rest of the core's answer is carried out (the committed records it hands to the
        state machine come after it) and before the loop turns; every message issued after it goes at once."""
        assert self.failure is None, "durability lane failed"
        self._next_seq += 1
        ticket = self._log.prepare_flush()
        if PROBE is not None:
            PROBE.stamp("flush_start", self._log.end_offset(), 0)
        try:
            ticket.sync()
        except BaseException as exc:  # as in _run: nothing after it may be sent; the node must stop
            self.failure = exc
            _log.critical("durable write failed: %s", exc)
            raise
        self._log.complete_flush(ticket)
        if PROBE is not None:
            PROBE.stamp("flush_done", self._log.flushed_end_offset(), 0)
        self.stats.fsyncs += 1
        self._complete([self._next_seq])
        self._on_flushed()
        return self._next_seq

    def persist(self, state: QuorumStateData) -> int:
        self.stats.election_requests += 1
        self._last_election_seq = self._issue(state)
        return self._last_election_seq

    def _issue(self, state: QuorumStateData | None) -> int:
        assert self.failure is None, "durability lane failed"
        self._next_seq += 1
        self._pending.append(_Op(self._next_seq, state))
        self._idle.clear()
        self._wake.set()
        return self._next_seq

    async def drain(self) -> None:
        """Wait until every operation issued so far has completed."""
        await self._idle.wait()
        if self.failure is not None:
            raise self.failure

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        try:
            while True:
                if not self._pending:
                    self._idle.set()
                    if self._closing:
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if self._pending[0].state is None:
                    await self._flush_all_queued()
                else:
                    await self._write_election()
        except BaseException as exc:  # a failed fsync: nothing after it may be sent; the node must stop
            self.failure = exc
            self._idle.set()
            _log.critical("durable write failed: %s", exc)
            raise

    async def _flush_all_queued(self) -> None:
        # Only the flushes issued so far are covered: ones issued while the fsync runs appended data it may miss.
        covered = {op.seq for op in self._pending if op.state is None}
        ticket = self._log.prepare_flush()
        if PROBE is not None:
            PROBE.stamp("flush_start", self._log.end_offset(), 1)
        if self._sync_inline is not None and self._sync_inline():
            ticket.sync()
        else:
            await self._run_flush(ticket.sync if PROBE is None else _probed(ticket.sync))
        self._log.complete_flush(ticket)
        if PROBE is not None:
            PROBE.stamp("flush_done", self._log.flushed_end_offset(), 1)
        self.stats.fsyncs += 1
        self._pending = deque(op for op in self._pending if op.seq not in covered)
        self._complete(covered)
        self._on_flushed()

    async def _write_election(self) -> None:
        ops = []
        while self._pending and self._pending[0].state is not None:
            ops.append(self._pending.popleft())
        state = ops[-1].state
        assert state is not None
        await self._run_blocking(lambda: self._store.write(state))
        self.stats.election_writes += 1
        self._complete([op.seq for op in ops])

    def _complete(self, seqs: Iterable[int]) -> None:
        self._completed.update(seqs)
        done = self.done_seq
        while done + 1 in self._completed:
            done += 1
            self._completed.discard(done)
        if done != self.done_seq:
            self.done_seq = done
            self._on_done(done)


def _probed(sync: Callable[[], None]) -> Callable[[], None]:
    """PROBE: the fsync's own start and end, wherever `run_flush` runs it (the hand-overs are the rest)."""

    def run() -> None:
        assert PROBE is not None
        PROBE.stamp("fsync_begin")
        sync()
        PROBE.stamp("fsync_end")

    return run
