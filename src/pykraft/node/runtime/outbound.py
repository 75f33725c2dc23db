"""Outbound raft requests: each `Send` of the core becomes one request over the connection pool, and its answer
goes back into the core's input queue with the core's own correlation id (the wire id is the pool's business).

Failures (connect refused, timeout, reset, an undecodable answer) are counted. For Fetch, FetchSnapshot and
ApiVersions they are fed back at once as a BROKER_NOT_AVAILABLE answer, as Kafka's KafkaNetworkChannel does on a
disconnect: the core backs off and retries (a follower asks a bootstrap server, an AddVoter fails fast instead of
hanging). For the other RPCs the answer is dropped and the core's own request timeout takes over, because their
handlers treat an error answer as "no information" without a retry backoff, and an immediate answer would turn
a dead peer into a busy resend loop.

`forward` (a client's request sent on to the leader, a broker's heartbeat to the controller) has its own
connections: on the raft ones its answer would wait behind a Fetch long-poll (up to the fetch max wait). `to_broker`
(the replica fetchers) has its own too, to the other brokers' inter-broker listener, with that listener's security
protocol (the controller listener's may differ).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.net.commit_probe import PROBE
from pykraft.net.errors import ConnectError, ConnectionClosedError, NetError
from pykraft.protocol import raft_fetch
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.raft.effects import Send

from pykraft.protocol.core_versions import to_request_version

_log = logging.getLogger("pykraft.node")

FAIL_FAST_APIS = frozenset({ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT, ApiKey.API_VERSIONS})
_SIZE_PREFIX = 4

Deliver = Callable[[int, int, Any], None]  # (source node id, core correlation id, response)
OnAnswer = Callable[[int, str, int, Any, Any], None]  # (node id, host, port, request, response)
OnError = Callable[[int, int, BaseException, str], None]  # (api key, version, exception, what): HandlerErrors.record
OnUnreachable = Callable[[int], None]  # (node id): a connection to it was refused or reset
# A refused or reset connection means the peer's process is gone (or restarting); a timeout does not (a paused peer
# keeps its sockets open), so RequestTimeoutError is not among them.
PEER_GONE_ERRORS = (ConnectError, ConnectionClosedError)


@dataclass(slots=True)
class OutboundStats:
    requests: int = 0
    responses: int = 0
    failures: int = 0
    unroutable: int = 0  # destinations without a known address


class Outbound:
    def __init__(self, pool: Any, *, timeout_ms: int, client_id: str, deliver: Deliver,
                 on_answer: OnAnswer | None = None, on_error: OnError | None = None,
                 forward_pool: Any | None = None, on_unreachable: OnUnreachable | None = None,
                 broker_pool: Any | None = None, coordinator_pool: Any | None = None) -> None:
        self._pool = pool
        self._on_unreachable = on_unreachable
        self._forward_pool = forward_pool if forward_pool is not None else pool  # `forward`'s own connections
        # `to_broker`'s: the inter-broker listener, whose security protocol may differ from the controllers'.
        self._broker_pool = broker_pool if broker_pool is not None else self._forward_pool
        # `to_broker_for_coordinator`'s: the transaction coordinator's markers and the partition leaders' KIP-890
        # verifications, on the inter-broker listener but not behind a replica fetcher's long-poll.
        self._coordinator_pool = coordinator_pool if coordinator_pool is not None else self._broker_pool
        self._on_answer = on_answer  # sees every decoded answer first (cluster_ids.py reads refusals)
        self._on_error = on_error
        self._timeout_ms = timeout_ms
        self._client_id = client_id
        self._deliver = deliver
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = OutboundStats()

    def transmit(self, send: Send) -> None:
        destination = send.destination
        if destination.host is None or destination.port is None:
            self.stats.unroutable += 1  # the core times it out and tries elsewhere
            return
        self.stats.requests += 1
        if PROBE is not None and int(send.request.__api_key__) == ApiKey.FETCH:
            PROBE.stamp("fetch_sent", probe_fetch_offset(send.request), destination.node_id)
        task = asyncio.get_running_loop().create_task(self._exchange(send, self._send_now(send)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send_now(self, send: Send) -> asyncio.Future[bytes] | None:
        """Over a live connection the request leaves now, not when the task first runs: that is a loop turn later,
        after the rest of the core's Ready (a follower's next Fetch would wait for its replay of committed
        records). None: no live connection, or a failure `_exchange` meets again and reports."""
        message, destination = send.request, send.destination
        try:
            return self._pool.send_now(destination.host, destination.port,
                                       lambda wire_id: self._encode(message, wire_id), timeout_ms=self._timeout_ms)
        except Exception:
            return None

    async def _exchange(self, send: Send, started: asyncio.Future[bytes] | None = None) -> None:
        message = send.request
        key, version = int(message.__api_key__), int(message.__version__)
        destination = send.destination
        try:
            payload = await (started if started is not None else self._pool.request(
                destination.host, destination.port, lambda wire_id: self._encode(message, wire_id),
                timeout_ms=self._timeout_ms))
            if PROBE is not None and key == ApiKey.FETCH:
                PROBE.stamp("fetch_resp", probe_fetch_offset(message), len(payload))
            decoded = decode_response(payload, key, version)
            response = to_request_version(decoded.message, version)
            self.stats.responses += 1
            if self._on_answer is not None and destination.host is not None and destination.port is not None:
                self._on_answer(destination.node_id, destination.host, destination.port, message, response)
        except (NetError, ProtocolError) as exc:
            self.stats.failures += 1
            _log.debug("request %s to node %s at %s:%s failed: %s", ApiKey(key).name, destination.node_id,
                       destination.host, destination.port, exc)
            if self._on_unreachable is not None and isinstance(exc, PEER_GONE_ERRORS) and destination.node_id >= 0:
                self._on_unreachable(destination.node_id)
            if key not in FAIL_FAST_APIS:
                return
            response = error_response_for(message, ErrorCode.BROKER_NOT_AVAILABLE)
        except Exception as exc:  # a bug reading this one answer: the core times the request out
            self._failed(key, version, exc, f"response from node {destination.node_id}")
            return
        self._deliver(destination.node_id, send.correlation_id, response)

    async def forward(self, host: str, port: int, message: Any, timeout_ms: int | None = None) -> Any | None:
        """Send a client's request on to another node (the leader) and return its answer; None if that failed.
        `timeout_ms`: how long to wait for an answer the leader holds on purpose (default: the raft request
        timeout)."""
        return await self._request_on(self._forward_pool, host, port, message, timeout_ms)

    async def to_broker(self, host: str, port: int, message: Any) -> Any | None:
        """A request to another broker on the inter-broker listener (a replica fetch); None if that failed."""
        return await self._request_on(self._broker_pool, host, port, message)

    async def to_broker_for_coordinator(self, host: str, port: int, message: Any) -> Any | None:
        """A coordinator's request to another broker (WriteTxnMarkers, AddPartitionsToTxn verification)."""
        return await self._request_on(self._coordinator_pool, host, port, message)

    async def _request_on(self, pool: Any, host: str, port: int, message: Any,
                          timeout_ms: int | None = None) -> Any | None:
        key, version = int(message.__api_key__), int(message.__version__)
        try:
            payload = await pool.request(host, port, lambda wire_id: self._encode(message, wire_id),
                                         timeout_ms=timeout_ms or self._timeout_ms)
            return decode_response(payload, key, version, borrow_records=True).message  # a Fetch answer's batches
        except (NetError, ProtocolError) as exc:
            self.stats.failures += 1
            _log.debug("forwarding %s to %s:%s failed: %s", ApiKey(key).name, host, port, exc)
            return None
        except Exception as exc:  # a bug reading this one answer: the caller treats it as no answer
            self._failed(key, version, exc, f"response from {host}:{port}")
            return None

    def _failed(self, key: int, version: int, exc: Exception, what: str) -> None:
        self.stats.failures += 1
        if self._on_error is not None:
            self._on_error(key, version, exc, what)
        else:
            _log.error("%s to %s v%d failed: %r", what, ApiKey(key).name, version, exc)

    def _encode(self, message: Any, wire_id: int) -> bytes:
        direct = raft_fetch.encode_request(message, wire_id, self._client_id)  # a follower's Fetch: the fast way
        if direct is not None:
            return direct
        return encode_request(message, correlation_id=wire_id, client_id=self._client_id)[_SIZE_PREFIX:]

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._pool.close()
        if self._forward_pool is not self._pool:
            await self._forward_pool.close()
        if self._broker_pool is not self._forward_pool:
            await self._broker_pool.close()
        if self._coordinator_pool is not self._broker_pool:
            await self._coordinator_pool.close()


def probe_fetch_offset(request: Any) -> int:
    """PROBE: the fetch offset of a raft Fetch (one partition); -1 when it names none."""
    topics = request.topics
    return int(topics[0].partitions[0].fetch_offset) if topics and topics[0].partitions else -1
