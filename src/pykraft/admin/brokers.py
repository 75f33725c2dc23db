"""A client of the brokers, as Kafka's tools use one: it knows the cluster (Metadata) and sends each request to
the node that must answer it (a partition's leader, a group's coordinator, any broker).

The operator tools (consumer-groups, console producer and consumer, get-offsets, the perf tests, ...) are built
on it; the metadata-quorum tools keep `AdminClient`, which follows the raft leader instead.

- `metadata(topics)` asks a bootstrap (then any known) broker, Metadata v12, and caches the brokers' addresses.
- `call(node, message)` is one request/response with one node (None: any broker), retried over transport
  failures; `retrying(what, attempt)` runs an attempt until it returns, raises a final error, or the deadline
  (`deadline_ms`, Kafka's default.api.timeout.ms and the tools' --timeout) passes. An attempt raises `Retry` for
  an answer worth another try (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
- `coordinator(group)`: FindCoordinator v4 (the first one creates `__consumer_offsets` on a pykraft broker, which
  answers COORDINATOR_NOT_AVAILABLE meanwhile: retried).
Nothing answering before the deadline raises `UnreachableError` (no node ever answered) or `DeadlineError` (nodes
answered, but with retriable errors until the end). `on_wait(text)` is called once, the first time no bootstrap
address answers while more than `WAIT_NOTICE_S` of the deadline remains, so a command waiting on a dead cluster
can say what it waits for instead of hanging silently.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.find_coordinator.v4 import request as fc_req
from kio.static.primitive import i8

from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode, ProtocolError

from . import topics as topic_requests
from .errors import AdminError, DeadlineError, UnreachableError
from .model import PartitionInfo, TopicDescription, error_code_of
from .transport import Transport, TransportError, default_transport

__all__ = ["BrokerClient", "BrokerNode", "ClusterMetadata", "Retry"]

T = TypeVar("T")
Address = tuple[str, int]
CLIENT_ID = "pykraft-tools"
WAIT_NOTICE_S = 5.0
GROUP_KEY_TYPE = 0
# FindCoordinator and group answers that mean "ask again, maybe elsewhere".
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
# Partition answers after which the leader must be looked up again.
LEADER_MOVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                          ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
                          ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR,
                          ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT,
                          ErrorCode.OFFSET_NOT_AVAILABLE})


class Retry(Exception):
    """An attempt's outcome worth another try; `refresh` asks for new metadata first."""

    def __init__(self, reason: str, *, refresh: bool = False, answered: bool = True,
                 address: Address | None = None) -> None:
        super().__init__(reason)
        self.reason, self.refresh, self.answered, self.address = reason, refresh, answered, address


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> Address:
        return self.host, self.port


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """One Metadata answer: the live brokers, the controller id it names, and the topics asked for."""

    cluster_id: str | None
    controller_id: int
    brokers: Mapping[int, BrokerNode]
    topics: Mapping[str, TopicDescription] = field(default_factory=dict)
    topic_errors: Mapping[str, ErrorCode] = field(default_factory=dict)

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        found = self.topics.get(topic)
        return None if found is None else next((p for p in found.partitions if p.partition == index), None)


class BrokerClient:
    def __init__(self, bootstrap: Sequence[Address], *, ssl_context: ssl.SSLContext | None = None,
                 request_timeout_ms: int = 30_000, deadline_ms: int = 60_000, retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int = 1000, transport: Transport | None = None, client_id: str = CLIENT_ID,
                 on_wait: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep, sasl: Any | None = None) -> None:
        if not bootstrap:
            raise ValueError("at least one bootstrap address is needed")
        self.bootstrap = [(str(h), int(p)) for h, p in bootstrap]
        self.client_id = client_id
        self.request_timeout_ms, self.deadline_ms = request_timeout_ms, deadline_ms
        self._backoff_ms, self._backoff_max_ms = retry_backoff_ms, retry_backoff_max_ms
        self._transport = transport if transport is not None else default_transport(ssl_context, sasl)
        self._ssl, self._sasl = ssl_context, sasl  # sasl: a net.sasl_client.SaslClientConfig (SASL_* protocols)
        self._one_way: dict[Address, asyncio.StreamWriter] = {}
        self._on_wait, self._waited = on_wait, False
        self._clock, self._sleep = clock, sleep
        self._next = 0
        self.brokers: dict[int, BrokerNode] = {}
        self._coordinators: dict[str, BrokerNode] = {}
        self._answered = False  # some node answered once: later failures are not "unreachable"

    async def __aenter__(self) -> BrokerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        for writer in self._one_way.values():
            writer.close()
        self._one_way.clear()
        await self._transport.close()

    # ---- the retry loop -------------------------------------------------------------------------------------
    async def retrying(self, what: str, attempt: Callable[[], Awaitable[T]], deadline_ms: int | None = None) -> T:
        """Run `attempt()` until it returns or raises something other than `Retry`, within the deadline."""
        budget = self.deadline_ms if deadline_ms is None else deadline_ms
        deadline = self._clock() + budget / 1000
        backoff, failures, last = self._backoff_ms, {}, "no attempt"
        while True:
            try:
                return await attempt()
            except Retry as retry:
                last = retry.reason if retry.address is None else f"{_text(retry.address)}: {retry.reason}"
                if retry.address is not None and not retry.answered:
                    failures[retry.address] = retry.reason
                if retry.refresh:
                    self._coordinators.clear()
            remaining = deadline - self._clock()
            self._maybe_notice(failures, remaining)
            if remaining <= backoff / 1000:
                if not self._answered and failures:
                    raise UnreachableError("server", [(h, p, r) for (h, p), r in failures.items()])
                raise DeadlineError(what, budget, last)
            await self._sleep(backoff / 1000)
            backoff = min(backoff * 2, self._backoff_max_ms)

    def _maybe_notice(self, failures: Mapping[Address, str], remaining_s: float) -> None:
        if self._waited or self._answered or self._on_wait is None or remaining_s <= WAIT_NOTICE_S:
            return
        if not all(address in failures for address in self.bootstrap):
            return
        self._waited = True
        detail = "; ".join(f"{_text(a)}: {failures[a]}" for a in self.bootstrap)
        self._on_wait(f"waiting up to {remaining_s:.0f} s for a bootstrap server to answer ({detail})")

    # ---- one exchange ---------------------------------------------------------------------------------------
    async def exchange(self, address: Address, message: Any, timeout_ms: int | None = None) -> Any:
        """One request/response; every failure becomes a `Retry`."""
        key, version = int(message.__api_key__), int(message.__version__)

        def build(correlation_id: int) -> bytes:
            return encode_request(message, correlation_id=correlation_id, client_id=self.client_id)[4:]

        try:
            payload = await self._transport.request(*address, build, timeout_ms=timeout_ms or self.request_timeout_ms)
        except TransportError as exc:
            self._coordinators = {g: n for g, n in self._coordinators.items() if n.address != address}
            raise Retry(exc.reason, answered=False, address=address) from None
        self._answered = True
        try:
            return decode_response(payload, key, version).message
        except ProtocolError as exc:
            raise Retry(f"a malformed response: {exc}", address=address) from None

    async def send_one_way(self, address: Address, message: Any, correlation_id: int) -> None:
        """A request that gets no answer (Produce with acks=0), on a connection of its own (the pooled one
        matches answers to requests in order). Raises `Retry` when it cannot be written."""
        writer = self._one_way.get(address)
        try:
            if writer is None or writer.is_closing():
                self._one_way[address] = writer = await asyncio.wait_for(self._open_one_way(address),
                                                                         self.request_timeout_ms / 1000)
            writer.write(encode_request(message, correlation_id=correlation_id, client_id=self.client_id))
            await writer.drain()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            self._one_way.pop(address, None)
            raise Retry(exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else
                        "closed by peer" if isinstance(exc, asyncio.IncompleteReadError) else "timed out",
                        answered=False, address=address) from None

    async def _open_one_way(self, address: Address) -> asyncio.StreamWriter:
        """A connection of its own, authenticated first on a SASL listener (the server closes a connection whose
        first request is not SASL's)."""
        reader, writer = await asyncio.open_connection(*address, ssl=self._ssl,
                                                       server_hostname=address[0] if self._ssl else None)
        if self._sasl is not None:
            from pykraft.net.errors import NetError
            from pykraft.net.sasl_client import authenticate

            async def request(build: Callable[[int], bytes]) -> bytes:
                payload = build(0)
                writer.write(len(payload).to_bytes(4, "big") + payload)
                await writer.drain()
                return await reader.readexactly(int.from_bytes(await reader.readexactly(4), "big"))
            try:
                await authenticate(request, self._sasl, self.client_id)
            except NetError as exc:
                writer.close()
                raise Retry(f"SASL authentication failed: {exc}", answered=False, address=address) from None
        return writer

    async def call(self, node: int | None, message: Any, what: str | None = None) -> Any:
        """`message` to broker `node` (None: a bootstrap or known broker), retried over transport failures."""
        async def attempt() -> Any:
            return await self.exchange(await self.address_of(node), message)

        return await self.retrying(what or type(message).__name__, attempt)

    async def address_of(self, node: int | None) -> Address:
        if node is None:
            candidates = self.bootstrap + [b.address for b in self.brokers.values() if b.address not in self.bootstrap]
            address = candidates[self._next % len(candidates)]
            self._next += 1
            return address
        if node not in self.brokers:
            await self._refresh_once()
        broker = self.brokers.get(node)
        if broker is None:
            raise Retry(f"broker {node} is not in the cluster's metadata", refresh=True)
        return broker.address

    # ---- metadata --------------------------------------------------------------------------------------------
    async def metadata(self, topics: Iterable[str] | None = None, auto_create: bool = False) -> ClusterMetadata:
        """Metadata v12 of the named topics (None: every topic); unknown names are in `topic_errors`. With
        `auto_create` a broker with auto.create.topics.enable creates the named topics (as producers ask)."""
        message = topic_requests.metadata_request(None if topics is None else list(topics))
        if auto_create:
            message = dataclasses.replace(message, allow_auto_topic_creation=True)
        return self.read_metadata(await self.call(None, message, "Metadata"))

    async def _refresh_once(self) -> None:
        message = topic_requests.metadata_request([])
        address = await self.address_of(None)
        self.read_metadata(await self.exchange(address, message))

    def read_metadata(self, response: Any) -> ClusterMetadata:
        brokers = {int(b.node_id): BrokerNode(int(b.node_id), b.host, int(b.port), b.rack) for b in response.brokers}
        self.brokers.update(brokers)
        found, errors = topic_requests.topic_descriptions(response)
        return ClusterMetadata(response.cluster_id, int(response.controller_id), brokers,
                               {t.name: t for t in found}, {e.topic: e.code for e in errors})

    # ---- group coordinators ----------------------------------------------------------------------------------
    async def coordinator(self, group: str) -> BrokerNode:
        """The group's coordinator (cached until a group answer says it moved: `forget_coordinator`)."""
        cached = self._coordinators.get(group)
        if cached is not None:
            return cached
        message = fc_req.FindCoordinatorRequest(key_type=i8(GROUP_KEY_TYPE), coordinator_keys=(group,))
        response = await self.exchange(await self.address_of(None), message)
        found = next((c for c in response.coordinators if c.key == group), None)
        code = ErrorCode.UNKNOWN_SERVER_ERROR if found is None else error_code_of(found.error_code)
        if code in COORDINATOR_MOVED:
            raise Retry(f"the coordinator of group {group!r} is not available yet ({code.name})")
        if code != ErrorCode.NONE:
            raise AdminError(code, None if found is None else found.error_message)
        assert found is not None  # (code is NONE)
        node = BrokerNode(int(found.node_id), found.host, int(found.port))
        self._coordinators[group] = node
        self.brokers.setdefault(node.node_id, node)
        return node

    def forget_coordinator(self, group: str) -> None:
        self._coordinators.pop(group, None)

    async def group_call(self, group: str, message: Any, error_of: Callable[[Any], ErrorCode],
                         what: str | None = None) -> Any:
        """`message` to the group's coordinator until it is answered by the coordinator; `error_of` reads the
        answer's group-level error (a moved coordinator is retried, any other error is the caller's)."""
        async def attempt() -> Any:
            node = await self.coordinator(group)
            response = await self.exchange(node.address, message)
            code = error_of(response)
            if code in COORDINATOR_MOVED:
                self.forget_coordinator(group)
                raise Retry(f"{_text(node.address)} answered {code.name} for group {group!r}")
            return response

        return await self.retrying(what or type(message).__name__, attempt)


def _text(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
