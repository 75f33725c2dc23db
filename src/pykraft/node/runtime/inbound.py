"""Inbound requests: one frame in, one answer out (or none), never an exception that is not a closed connection.

- A frame that does not decode (unknown api key, malformed header or body, a version no error answer can be built
  for) closes the connection and is counted, as Kafka does.
- A version the node does not support gets Kafka's UNSUPPORTED_VERSION answer (built by the codec).
- ApiVersions, Metadata and DescribeCluster are answered here from the core's state, with the endpoints of the
  listener the request came in on (client_apis.py, metadata_api.py, listeners.py); Produce
  waits for its write to commit (writes.py); UpdateFeatures is the controller host's (an extra handler); the raft
  RPCs go through the core's input queue and come back at the version the request used (versions.py).
- DescribeQuorum reaching a node that is not the leader is forwarded to the leader (`_forward_to_leader`).
- Extra handlers (the controller's RPCs, later) plug in by api key.
- A request whose handling raises (a bug, here or on the core task) is answered UNKNOWN_SERVER_ERROR, logged and
  counted (`_failed`, the containment boundary of every listener: handler_errors.py); the node goes on.
- Authorization comes first (`handle`): the node's RequestAuthorizer (node/runtime/authz.py) lets the request through,
  refuses it, or narrows it to what the principal may do and completes the answer. An Envelope (a request a broker
  forwarded, node/runtime/envelope.py) is opened here and its request handled the same way, as its client.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pykraft.net.server import CloseConnection, ConnectionInfo
from pykraft.protocol import produce_answer, raft_fetch
from pykraft.protocol.apis import ApiKey, ApiRegistry
from pykraft.protocol.codec import (
    DecodedRequest,
    RequestDecodeFailure,
    decode_request,
    encode_response_body,
)
from pykraft.protocol.framing import FrameBody
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode, ProtocolError

from pykraft.node.runtime import client_apis, metadata_api, writes
from pykraft.node.runtime.authz import AuthorizerNotReadyError, Denied, Narrowed, RequestAuthorizer
from pykraft.node.runtime.envelope import envelope_answer, inner_answer_bytes, open_envelope
from pykraft.node.runtime.listeners import request_listener
from pykraft.protocol.core_versions import CORE_VERSIONS, to_core_request, to_request_version

if TYPE_CHECKING:
    from pykraft.node.runtime.runtime import NodeRuntime

_log = logging.getLogger("pykraft.node")
_SIZE_PREFIX = 4

ExtraHandler = Callable[[DecodedRequest], Awaitable[Any | None]]


class InboundHandler:
    def __init__(self, runtime: NodeRuntime, registry: ApiRegistry,
                 extra: Mapping[int, ExtraHandler] | None = None, broker_registry: ApiRegistry | None = None,
                 authorizer: RequestAuthorizer | None = None) -> None:
        self.runtime = runtime
        self.authorizer = authorizer  # None: every request allowed (a node without authorizer.class.name)
        self.registry = registry  # a controller listener's APIs (every listener's on a node of one role)
        # A broker listener's APIs on a node with both roles: Kafka serves a combined node's listeners with
        # ControllerApis and KafkaApis apart, so a client cannot reach the controller RPCs on its broker listener
        # nor produce through its controller listener.
        self.broker_registry = broker_registry if broker_registry is not None else registry
        self._broker_listeners = frozenset(runtime.config.broker_listener_names()) if broker_registry else frozenset()
        self.extra = dict(extra or {})
        self.produce_enabled = writes.produce_enabled(runtime.config.raw)  # pykraft.produce.enable
        self.bad_frames = 0

    async def __call__(self, info: ConnectionInfo, payload: memoryview) -> bytes | memoryview | FrameBody | None:
        started = time.perf_counter()
        try:
            # The server's frame: ours. The connection info rides along (the listener the request came in on).
            decoded = decode_request(payload, self.registry_of(info.listener_name), borrow_records=True, context=info)
        except ProtocolError as exc:
            self.bad_frames += 1
            _log.warning("closing connection %s from %s:%s: %s", info.connection_id, info.peer_host, info.peer_port,
                         exc)
            raise CloseConnection(str(exc)) from None
        # A Produce's batches are views of the frame (no copy): its buffer lives on as the batch the leader appends
        # and keeps in its tail cache for the followers, instead of a copy of it.
        del payload
        if isinstance(decoded, RequestDecodeFailure):
            return decoded.response[_SIZE_PREFIX:]
        stats = self.runtime.request_stats
        try:
            response = await self.handle(decoded)
            answer = None if response is None else _encode_answer(decoded.correlation_id, response)
        except CloseConnection:
            raise
        except AuthorizerNotReadyError as exc:  # not a bug: Kafka's AuthorizerNotReadyException, a retriable failure
            return self._refused(decoded, str(exc))
        except Exception as exc:  # the boundary of this one request: fail it, not the node
            stats.record_failure(int(decoded.api_key), decoded.api_version, time.perf_counter() - started)
            return self._failed(decoded, exc)
        stats.record(int(decoded.api_key), decoded.api_version, decoded.message, response,
                     time.perf_counter() - started)
        return answer

    async def handle(self, decoded: DecodedRequest) -> Any | None:
        """Authorize, then dispatch (see the module docstring); the answer at the request's version, or None."""
        authorizer = self.authorizer
        if decoded.api_key == ApiKey.ENVELOPE:
            check = authorizer.check(decoded, True) if authorizer is not None else None
            return check.response if isinstance(check, Denied) else await self._open_envelope(decoded)
        if authorizer is None:
            return await self.dispatch(decoded)
        check = authorizer.check(decoded, not request_listener(decoded, self.runtime.config).serves_brokers)
        if check is None:
            return await self.dispatch(decoded)
        if isinstance(check, Denied):
            return check.response
        assert isinstance(check, Narrowed)
        answer = None if check.request is None else await self.dispatch(dataclasses.replace(decoded,
                                                                                            message=check.request))
        return check.finish(answer)

    async def _open_envelope(self, decoded: DecodedRequest) -> Any:
        """A forwarded request, answered as its client (authorized as that principal) inside an EnvelopeResponse."""
        inner = open_envelope(decoded, self.registry_of(request_listener(decoded, self.runtime.config).name))
        if not isinstance(inner, DecodedRequest):
            return inner
        try:
            answer = await self.handle(inner)
        except AuthorizerNotReadyError as exc:
            answer = error_response_for(inner.message, ErrorCode.UNKNOWN_SERVER_ERROR, error_message=str(exc))
        if answer is None:
            return envelope_answer(ErrorCode.UNKNOWN_SERVER_ERROR)
        return envelope_answer(ErrorCode.NONE, inner_answer_bytes(inner, answer))

    def _refused(self, decoded: DecodedRequest, text: str) -> memoryview | FrameBody:
        """UNKNOWN_SERVER_ERROR for a request the authorizer could not decide yet (Kafka's answer to its
        AuthorizerNotReadyException); the connection closes when the answer has nowhere to carry it."""
        try:
            answer = error_response_for(decoded.message, ErrorCode.UNKNOWN_SERVER_ERROR, error_message=text)
        except ValueError:
            raise CloseConnection(text) from None
        return encode_response_body(decoded.correlation_id, answer)

    def registry_of(self, listener_name: str | None) -> ApiRegistry:
        """The APIs served on `listener_name` (see __init__)."""
        return self.broker_registry if listener_name in self._broker_listeners else self.registry

    def _failed(self, decoded: DecodedRequest, exc: Exception) -> memoryview | FrameBody:
        """UNKNOWN_SERVER_ERROR for a request whose handling raised; the connection closes when even that
        answer cannot be built (a response type with no error field to carry it)."""
        self.runtime.handler_errors.record(int(decoded.api_key), decoded.api_version, exc, "request")
        try:
            answer = error_response_for(decoded.message, ErrorCode.UNKNOWN_SERVER_ERROR,
                                        error_message=f"{type(exc).__name__} while handling the request")
            return encode_response_body(decoded.correlation_id, answer)
        except Exception as error:  # no answer: the client sees the connection close
            raise CloseConnection(f"no error answer for {decoded.api_key.name}: {error}") from None

    async def dispatch(self, decoded: DecodedRequest) -> Any | None:
        key, message, runtime = decoded.api_key, decoded.message, self.runtime
        core = runtime.core
        handler = self.extra.get(key)
        listener = request_listener(decoded, runtime.config)
        if handler is not None and key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA) and listener.serves_brokers:
            # A broker's data plane takes Produce and Fetch (it hands `__cluster_metadata` back: answer_on_core,
            # produce_metadata) and Metadata (auto.create.topics.enable, then the answer below); on a combined
            # node's controller listener these are the controller's, as a controller-only node answers them.
            return await handler(decoded)
        if key == ApiKey.API_VERSIONS:
            registry = self.registry_of(listener.name)
            return client_apis.api_versions(core, registry, message, client_apis.image_of(runtime.state_machine))
        if key == ApiKey.METADATA:
            return metadata_api.metadata(core, runtime.cluster_id, message, client_apis.image_of(runtime.state_machine),
                                         listener)
        if key == ApiKey.DESCRIBE_CLUSTER:
            return client_apis.describe_cluster(core, runtime.cluster_id, message,
                                                client_apis.image_of(runtime.state_machine), listener)
        if key == ApiKey.PRODUCE:
            return await self.produce_metadata(decoded)
        if key == ApiKey.DESCRIBE_QUORUM:
            forwarded = await self._forward_to_leader(to_core_request(message))
            if forwarded is not None:
                return to_request_version(forwarded, decoded.api_version)
        if key in CORE_VERSIONS:
            return await self.answer_on_core(decoded)
        if handler is None:  # the registry is trimmed to what is served, so only a wiring bug lands here
            raise CloseConnection(f"no handler for {ApiKey(key).name}")
        return await handler(decoded)


    async def answer_on_core(self, decoded: DecodedRequest) -> Any:
        """A raft RPC answered by the core, at the request's version."""
        response = await self.runtime.core_request(to_core_request(decoded.message))
        if response is None:
            raise CloseConnection("the node is stopping")
        return to_request_version(response, decoded.api_version)

    async def produce_metadata(self, decoded: DecodedRequest) -> Any | None:
        """Produce to `__cluster_metadata` (writes.py), off unless pykraft.produce.enable."""
        return await writes.produce(self.runtime.appends, self.produce_enabled, decoded.message)

    async def _forward_to_leader(self, message: Any) -> Any | None:
        """DescribeQuorum on a node that is not the leader goes on to the leader, as a Kafka broker forwards it to the
        active controller: stock clients (kafka-python) send it to whichever node they know, and only the leader can
        answer it. Without a known leader address (or if forwarding fails) the core answers NOT_LEADER_OR_FOLLOWER."""
        core = self.runtime.core
        leader_id = core.quorum.leader_id()
        if leader_id is None or leader_id == core.local.node_id:
            return None
        endpoints = getattr(core.quorum.state, "leader_endpoints", None)
        destination = core.destination_of(leader_id, endpoints if endpoints else None)
        if destination.host is None or destination.port is None:
            return None
        return await self.runtime.outbound.forward(destination.host, destination.port, message)


def _encode_answer(correlation_id: int, response: Any) -> bytes | memoryview | FrameBody:
    """A raft Fetch answer and a Produce v9 answer (the commit path) are encoded directly, anything else by kio;
    the bytes are the same (raft_fetch.py, produce_answer.py)."""
    key = int(response.__api_key__)
    direct = (raft_fetch.encode_response_body(correlation_id, response) if key == ApiKey.FETCH
              else produce_answer.encode_response_body(correlation_id, response) if key == ApiKey.PRODUCE else None)
    return direct if direct is not None else encode_response_body(correlation_id, response)


def served_registry(registry: ApiRegistry, extra: Mapping[int, ExtraHandler] | None) -> ApiRegistry:
    """`registry` without the APIs nobody on this node answers (the controller RPCs until a controller plugs in):
    advertising them would invite requests that could only be dropped."""
    served = {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER, ApiKey.PRODUCE, ApiKey.ENVELOPE,
              *CORE_VERSIONS, *(extra or {})}  # UpdateFeatures is the controller's (an extra handler): a raft-only node has no rules
    for key in registry.api_keys:
        if key not in served:
            registry = registry.without(key)
    return registry

