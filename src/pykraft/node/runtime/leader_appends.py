"""Leader appends: records written to the metadata log by this node as the leader, and the wait for their commit.

`LeaderAppends.append_committed` (a controller's records, re-encoded Produce values) and `append_encoded_committed`
(batches a client encoded, appended as they are: writes.py) run the append on the core task and wait until the
high watermark passes the last offset written. `CommitWaiters` are those waits (the one purgatory,
raft/purgatory.py), checked after every core input (`check`, from effects.py); a write fails with
NOT_LEADER_OR_FOLLOWER once this node no longer leads the epoch it wrote in (Kafka's appendPurgatory completes
exceptionally on resignation), and every write still waiting fails when the node stops (`fail_all`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pykraft.net.commit_probe import PROBE
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.accumulator import RecordBatchTooLargeError
from pykraft.raft.client import NotLeaderError, RaftCore
from pykraft.raft.effects import Ready
from pykraft.raft.purgatory import ThresholdPurgatory

from pykraft.node.runtime.core_task import Input
from pykraft.node.runtime.handler_errors import contained, fail_answer
from pykraft.node.runtime.writes import WriteFailed

__all__ = ["CommitWaiters", "LeaderAppends"]


class CommitWaiters:
    """Futures waiting for the high watermark (the broker's one purgatory, raft/purgatory.py)."""

    def __init__(self) -> None:
        self._waiters: ThresholdPurgatory[asyncio.Future[None]] = ThresholdPurgatory()

    def add(self, offset: int, epoch: int) -> asyncio.Future[None]:
        """A future that completes once the high watermark is above `offset`, or fails once this node no longer
        leads `epoch`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(offset + 1, future, epoch)
        return future

    def check(self, hwm: int | None, leading_epoch: int | None) -> None:
        if not self._waiters:
            return
        failed, completed = self._waiters.check(hwm, leading_epoch)
        for future in failed:  # a waiter cancelled meanwhile (its request timed out) stays until its turn comes
            if not future.done():
                future.set_exception(WriteFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                 "leadership was lost before the write committed"))
        for future in completed:
            if not future.done():
                future.set_result(None)

    def fail_all(self, error: ErrorCode, message: str) -> None:
        for future in self._waiters.drain():
            if not future.done():
                future.set_exception(WriteFailed(error, message))

    def __len__(self) -> int:
        return len(self._waiters)


class LeaderAppends:
    """The writer of writes.py (`Writer`) over the core: `core()` is the started core, `put` queues an input on the
    core task, `stopping()` says the node stops."""

    def __init__(self, core: Callable[[], RaftCore], put: Callable[[Input], None],
                 stopping: Callable[[], bool]) -> None:
        self._core = core
        self._put = put
        self._stopping = stopping
        self.waiters = CommitWaiters()

    def check(self, high_watermark: int | None, leading_epoch: int | None) -> None:
        """After a core input: complete the writes the high watermark passed, fail those of an epoch no longer led."""
        self.waiters.check(high_watermark, leading_epoch)

    def fail_all(self) -> None:
        self.waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the node is stopping")

    async def append_committed(self, values: list[bytes]) -> int:
        """Append on the leader and wait until committed; the base offset. Raises WriteFailed."""
        last = await self._append_and_wait(lambda core, now: core.append(values, now))
        return last - len(values) + 1

    async def append_encoded_committed(self, batches: list[tuple[memoryview, int]]) -> int:
        """`append_committed` for (batch, record count) pairs a client encoded, appended as they are."""
        if PROBE is not None:
            PROBE.stamp("produce_in")
        last = await self._append_and_wait(lambda core, now: core.append_encoded(batches, now))
        if PROBE is not None:
            PROBE.stamp("produce_done", last + 1)
        return last - sum(count for _, count in batches) + 1

    async def _append_and_wait(self, append_on_core: Callable[[RaftCore, int], tuple[int, Ready]]) -> int:
        """Run `append_on_core(core, now)` on the core task, then wait until the high watermark passes the last
        offset it returns (which this returns). Raises WriteFailed."""
        if self._stopping():
            raise WriteFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the node is stopping")
        accepted: asyncio.Future[asyncio.Future[None]] = asyncio.get_running_loop().create_future()
        last_offset = -1

        def append(now: int) -> Ready | None:
            nonlocal last_offset
            core = self._core()
            try:
                last_offset, ready = append_on_core(core, now)
            except NotLeaderError as exc:
                accepted.set_exception(WriteFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER, str(exc)))
                return None
            except RecordBatchTooLargeError as exc:
                accepted.set_exception(WriteFailed(ErrorCode.MESSAGE_TOO_LARGE, str(exc)))
                return None
            accepted.set_result(self.waiters.add(last_offset, core.quorum.epoch))
            if PROBE is not None:
                PROBE.stamp("appended", last_offset + 1)
            return ready

        self._put(contained(append, fail_answer(accepted)))  # a bug fails the writer's caller (Produce)
        await (await accepted)  # append-records and commit-latency: NodeMetrics counts every leader write
        return last_offset
