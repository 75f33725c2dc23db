"""Fuzzing of SASL (issue 33), as tests/node/test_protocol_fuzz.py fuzzes the other APIs: a combined node whose two
listeners are SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256, the StandardAuthorizer on), and schema-drawn and mutated
frames from clients that never authenticate:

- SaslHandshake v0-1 and SaslAuthenticate v0-2 as the first frame, and random tokens after a valid handshake;
- every API the listener advertises as the first frame (only ApiVersions and SaslHandshake are answered);
after each, a Metadata request on the same connection gets no data (the connection is closed, or the answer names no
broker and no topic), the node is still alive on a fresh connection, nothing failed and no handler raised.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.metadata.v12.request import MetadataRequest

from pykraft.broker.actions import BrokerState
from pykraft.node.config.node_config import parse_config
from pykraft.node.roles.combined_host import combined_runtime, host_parts
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ProtocolError

from protocol.helpers import mutated
from protocol.schema_strategies import message
from .helpers import format_dir, free_ports
from .test_protocol_fuzz import ANSWER_TIMEOUT_S, Closed, _read_frame, _send

EXAMPLES = int(os.environ.get("PYKRAFT_FUZZ_EXAMPLES", "5"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" ' \
        'password="admin-secret" user_admin="admin-secret";'
SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
HINTS = (("mechanism", ("PLAIN", "SCRAM-SHA-256", "GSSAPI")),)
METADATA = MetadataRequest(topics=None, allow_auto_topic_creation=True, include_topic_authorized_operations=True)
SASL_FRAMES = [(ApiKey.SASL_HANDSHAKE, v) for v in (0, 1)] + [(ApiKey.SASL_AUTHENTICATE, v) for v in (0, 1, 2)]


@dataclass
class Node:
    loop: asyncio.AbstractEventLoop
    runtime: Any
    ports: dict[str, int]


def _config(data_dir: Path, broker_port: int, controller_port: int) -> Any:
    format_dir(data_dir, 1)
    lines = [
        "process.roles=broker,controller", "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}", f"metadata.log.dir={data_dir}",
        f"log.dirs={data_dir}", "controller.quorum.election.timeout.ms=300", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        "sasl.mechanism.controller.protocol=PLAIN", "sasl.mechanism.inter.broker.protocol=PLAIN",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:admin",
        "connection.failed.authentication.delay.ms=0", "offsets.topic.replication.factor=1",
    ]
    for listener in ("controller", "plaintext"):
        lines += [f"listener.name.{listener}.plain.sasl.jaas.config={PLAIN}",
                  f"listener.name.{listener}.scram-sha-256.sasl.jaas.config={SCRAM}"]
    return parse_config("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="sasl-fuzzed-node", daemon=True)
    thread.start()

    def run(coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    broker_port, controller_port = free_ports(2)
    runtime = combined_runtime(_config(tmp_path_factory.mktemp("sasl-fuzz"), broker_port, controller_port))

    async def start() -> None:
        await runtime.start()
        host_parts(runtime.state_machine)[1].start()
        while host_parts(runtime.state_machine)[1].lifecycle.state is not BrokerState.RUNNING:
            await asyncio.sleep(0.05)

    try:
        run(start())
        yield Node(loop, runtime, {"broker": broker_port, "controller": controller_port})
    finally:
        run(runtime.stop(graceful=False))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def _body(request: Any, correlation_id: int) -> bytes:
    return encode_request(request, correlation_id=correlation_id, client_id="fuzz")[4:]


def _no_data(port: int, frames: list[bytes]) -> list[bytes]:
    """Send `frames`, then Metadata (correlation id 99); the answers read before the close, checking that no
    Metadata answer carries a broker or a topic."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        try:
            for frame in frames:
                _send(sock, frame)
            _send(sock, _body(METADATA, 99))
            while True:
                frame = _read_frame(sock)
                answers.append(frame)
                if frame[:4] == (99).to_bytes(4, "big"):
                    metadata = decode_response(frame, ApiKey.METADATA, 12).message
                    assert not metadata.brokers and not metadata.topics, metadata
                    break
        except (Closed, BrokenPipeError, ConnectionResetError):
            pass
    return answers


def _alive(node: Node, port: int) -> None:
    answers = _no_data(port, [])  # a fresh unauthenticated connection: still refused, not broken
    assert not node.runtime.failure and not node.runtime.handler_errors.total, node.runtime.handler_errors.by_api
    assert all(frame[:4] != (99).to_bytes(4, "big") or len(frame) > 4 for frame in answers)


@pytest.mark.parametrize("listener", ["broker", "controller"])
@pytest.mark.parametrize(("key", "version"), SASL_FRAMES, ids=[f"{k.name}-v{v}" for k, v in SASL_FRAMES])
def test_fuzzed_sasl_frames_never_authenticate(node: Node, listener: str, key: ApiKey, version: int) -> None:
    port = node.ports[listener]
    strategy = message(request_class(key, version), 100, HINTS)

    @FUZZ
    @given(request=strategy)
    def valid(request: Any) -> None:
        _no_data(port, [_body(request, 7)])

    @FUZZ
    @given(data=st.data(), request=strategy)
    def broken(data: st.DataObject, request: Any) -> None:
        _no_data(port, [data.draw(mutated(_body(request, 7)))])

    valid()
    broken()
    _alive(node, port)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_random_tokens_after_a_handshake_fail(node: Node, mechanism: str) -> None:
    port = node.ports["broker"]
    handshake = request_class(ApiKey.SASL_HANDSHAKE, 1)(mechanism=mechanism)
    authenticate = request_class(ApiKey.SASL_AUTHENTICATE, 2)

    @FUZZ
    @given(token=st.binary(max_size=200) | st.sampled_from([b"\0admin\0wrong", b"n,,n=admin,r=x", b"\0\0", b""]))
    def tokens(token: bytes) -> None:
        answers = _no_data(port, [_body(handshake, 1), _body(authenticate(auth_bytes=token), 2)])
        assert len(answers) >= 1  # the handshake's answer
        if len(answers) >= 2:
            assert decode_response(answers[1], ApiKey.SASL_AUTHENTICATE, 2).message.error_code != 0

    tokens()
    _alive(node, port)


def test_every_api_before_authentication_is_refused(node: Node) -> None:
    port = node.ports["broker"]
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT_S) as sock:
        _send(sock, _body(request_class(ApiKey.API_VERSIONS, 3)(client_software_name="fuzz",
                                                               client_software_version="1"), 1))
        versions = decode_response(_read_frame(sock), ApiKey.API_VERSIONS, 3).message
    pairs = [(int(k.api_key), int(k.max_version)) for k in versions.api_keys
             if int(k.api_key) not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)]
    assert len(pairs) > 30
    for key, version in pairs:
        @settings(FUZZ, max_examples=2)
        @given(request=message(request_class(key, version), 100, ()))
        def first_frame(request: Any) -> None:
            try:
                body = _body(request, 7)
            except (ProtocolError, ValueError):
                return
            answers = _no_data(port, [body])
            assert answers == [], f"{ApiKey(key).name} v{version} answered before authentication"

        first_frame()
    _alive(node, port)
