"""The end of a node's life: the graceful hand-over of leadership, then every part closed in order.

`NodeShutdown.stop` asks the core to resign (Kafka's raft client is given 5 s to hand leadership over) and waits
for its ShutdownComplete, the timeout, or a second stop() (a second signal must always stop the node), then ends
the core task and closes the parts (`close`). Closing goes on when some parts fail (a vanished data directory fails
the final flush, a full disk the last trace line): every part is closed all the same, and the failures are kept to
be reported (`Closer`, `close_failure`), because a node that cannot close its files must still stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pykraft.net.server import FrameServer
from pykraft.raft.client import RaftCore

from pykraft.node.runtime.core_task import CoreTask
from pykraft.node.runtime.flusher import DurabilityLane
from pykraft.node.runtime.leader_appends import LeaderAppends
from pykraft.node.runtime.outbound import Outbound
from pykraft.node.runtime.raft_rpcs import RaftRpcs
from pykraft.node.runtime.trace import TraceWriter

__all__ = ["SHUTDOWN_TIMEOUT_MS", "Closer", "NodeCloseError", "NodeShutdown", "close_trace"]

_log = logging.getLogger("pykraft.node")

SHUTDOWN_TIMEOUT_MS = 5000  # Kafka's raft client is given 5 s to hand leadership over


class NodeCloseError(Exception):
    """The node stopped, but flushing or closing its files failed (one line: what failed and why)."""


class Closer:
    def __init__(self) -> None:
        self.problems: list[str] = []  # one line each: "<what> failed: <why>"

    async def step(self, what: str, closing: Awaitable[Any]) -> None:
        try:
            await closing
        except Exception as exc:  # recorded; the other parts are closed all the same
            self._failed(what, exc)

    def call(self, what: str, close: Callable[..., Any], *args: Any) -> None:
        try:
            close(*args)
        except Exception as exc:  # as step()
            self._failed(what, exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        self.problems.append(f"{what} failed: {reason}")
        _log.error("%s failed: %s", what, reason)


class NodeShutdown:
    def __init__(self) -> None:
        self.started = False  # stop() has begun
        self.timeout_ms = SHUTDOWN_TIMEOUT_MS  # what stop() gave the core to hand leadership over
        self.handed_over = asyncio.Event()  # set by the core's ShutdownComplete
        self._skip_handover = asyncio.Event()  # set by a second stop() during the graceful hand-over
        self.stopped = asyncio.Event()
        self.close_failure: NodeCloseError | None = None

    async def stop(self, graceful: bool, timeout_ms: int, task: CoreTask, core: Callable[[], RaftCore],
                   close: Callable[[bool], Awaitable[None]]) -> None:
        """Resign gracefully (wait for ShutdownComplete or the timeout), end the core task, then `close(graceful)`.
        A second call while the first waits for the hand-over ends that wait; every call returns once the node is
        closed."""
        if self.started:
            self._skip_handover.set()
            await self.stopped.wait()
            return
        self.started = True
        self.timeout_ms = timeout_ms
        if graceful and task.running:
            task.put(lambda now: core().shutdown(now, timeout_ms))
            await self._hand_over(timeout_ms)
        await task.stop()
        await close(graceful)

    async def _hand_over(self, timeout_ms: int) -> None:
        handed_over = asyncio.ensure_future(self.handed_over.wait())
        skipped = asyncio.ensure_future(self._skip_handover.wait())
        done, _ = await asyncio.wait((handed_over, skipped), timeout=timeout_ms / 1000 + 1,
                                     return_when=asyncio.FIRST_COMPLETED)
        handed_over.cancel()
        skipped.cancel()
        if not done:
            _log.warning("graceful shutdown did not complete within %d ms", timeout_ms)

    async def close(self, *, rpcs: RaftRpcs, appends: LeaderAppends, lane: DurabilityLane,
                    servers: Sequence[FrameServer], outbound: Outbound, close_metrics: Callable[[], None],
                    close_storage: Callable[[], None] | None, close_trace: Callable[[], None]) -> None:
        """Close every part, each even if an earlier one failed, and always end in the stopped state. The first
        failure is kept in `close_failure` (the runtime's run_until_stopped raises it)."""
        rpcs.release_all()
        appends.fail_all()
        closer = Closer()
        try:
            await closer.step("final flush", lane.drain())
            for server in servers:
                await closer.step("closing a listener", server.close())
            await closer.step("closing connections", outbound.close())
            await closer.step("closing the durability lane", lane.close())
            closer.call("closing metrics", close_metrics)
            if close_storage is not None:
                closer.call("final flush and close of the metadata log", close_storage)
            closer.call("closing the trace", close_trace)
        finally:
            if closer.problems and self.close_failure is None:
                self.close_failure = NodeCloseError(closer.problems[0])
            self.stopped.set()


def close_trace(trace: TraceWriter, core: RaftCore, now_ms: Callable[[], int], graceful: bool) -> None:
    """The trace's last lines (pending transitions, "stopped"), then its file closed even if writing them failed."""
    try:
        trace.flush_pending(core, now_ms())
        trace.event(now_ms(), "stopped", graceful=graceful)
    finally:
        trace.close()
