"""Watching the node an admin request waits on, so that a paused or wedged node does not hold a command for the
whole request timeout.

A SIGSTOPped process still completes TCP handshakes (the kernel does that) but never answers, so a request to it
waits `request.timeout.ms` (30 s by default), although the quorum elects a new leader within about the election
timeout. Shortening the request timeout is no cure: a live leader may hold a voter change or a CreateTopics for as
long as the commit takes. So instead, while an answer is overdue, the node itself is asked whether it is alive:
every `interval_ms` of waiting, an ApiVersions on a separate connection (a pooled connection would queue it behind
the pending request, as Kafka servers answer in order) must be answered within `probe_timeout_ms`. A node that
answers the probe keeps its request; one that does not is given up (`TransportTimeoutError`: the request was sent,
so a voter change is then in doubt) and the client rediscovers the leader. A paused node therefore costs at most
`interval_ms + probe_timeout_ms` per attempt (3 s with the defaults). The client then keeps away from that node
for as long again (`suspect_s`): the followers go on naming it as leader until they time out and elect another,
and asking them again costs less than another 3 s on the paused node.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable

from pykraft.protocol.codec import encode_request
from pykraft.raft.reconfig_messages import api_versions_request

from .transport import Transport, TransportError, TransportTimeoutError

__all__ = ["LivenessWatch", "NodeUnresponsiveError"]

PROBE_INTERVAL_MS = 1000
PROBE_TIMEOUT_MS = 2000


class NodeUnresponsiveError(TransportTimeoutError):
    """The node stopped answering while a request waited for it (the request was sent: it may have acted)."""


class LivenessWatch:
    def __init__(self, probe_transport: Transport, client_id: str, *, interval_ms: int = PROBE_INTERVAL_MS,
                 probe_timeout_ms: int = PROBE_TIMEOUT_MS) -> None:
        self._transport = probe_transport
        self._client_id = client_id
        self._interval_s = interval_ms / 1000
        self._probe_timeout_ms = probe_timeout_ms
        self.probes = 0  # ApiVersions probes sent (for tests and logs)

    @property
    def suspect_s(self) -> float:
        """How long a node that failed its probe is kept away from: as long as finding it out took."""
        return self._interval_s + self._probe_timeout_ms / 1000

    async def answer(self, host: str, port: int, request: Awaitable[bytes]) -> bytes:
        """`request`'s answer (or its error). Raises NodeUnresponsiveError, after cancelling `request`, when the
        node stops answering the probes while the answer is overdue."""
        pending = asyncio.ensure_future(request)
        try:
            while True:
                done, _ = await asyncio.wait((pending,), timeout=self._interval_s)
                if done or await self._alive_or_answered(host, port, pending):
                    if pending.done():
                        return pending.result()
                    continue
                raise NodeUnresponsiveError(
                    host, port, f"stopped answering: no answer to an ApiVersions probe within "
                                f"{self._probe_timeout_ms} ms while a request was waiting")
        finally:
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pending

    async def _alive_or_answered(self, host: str, port: int, pending: asyncio.Future[bytes]) -> bool:
        """Probe the node; True if it answered the probe or `pending` completed meanwhile."""
        self.probes += 1
        probe = asyncio.ensure_future(self._transport.request(host, port, self._build_probe,
                                                              timeout_ms=self._probe_timeout_ms))
        try:
            # The transport bounds the probe; the extra second only covers a transport that overruns its bound.
            await asyncio.wait((pending, probe), timeout=self._probe_timeout_ms / 1000 + 1,
                               return_when=asyncio.FIRST_COMPLETED)
            if pending.done():
                return True
            return probe.done() and not probe.cancelled() and probe.exception() is None
        finally:
            if not probe.done():
                probe.cancel()
            with contextlib.suppress(asyncio.CancelledError, TransportError, Exception):
                await probe

    def _build_probe(self, correlation_id: int) -> bytes:
        return encode_request(api_versions_request(), correlation_id=correlation_id, client_id=self._client_id)[4:]

