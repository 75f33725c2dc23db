"""SASL on a FrameServer listener (net/sasl_server.py glued into server.py) against the net client (sasl_client.py)
and against raw sockets: PLAIN and SCRAM-SHA-256/512, refusals, requests before authentication, the legacy v0
handshake, and KIP-368 re-authentication (a client that renews its session goes on, one that does not is closed)."""

from __future__ import annotations

import asyncio
import struct

import pytest

from pykraft.controller.scram_control import ScramCredential
from pykraft.net.client import Connection, ConnectionPool
from pykraft.net.errors import ConnectError, ConnectionClosedError
from pykraft.net.sasl_client import SaslClientConfig
from pykraft.net.sasl_server import SaslServerConfig
from pykraft.net.server import ConnectionInfo, FrameServer, ListenerSecurity
from pykraft.protocol import scram
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.lazy_schema import schema_module

pytestmark = pytest.mark.asyncio
versions_rq = schema_module("kio.schema.api_versions.v3.request")
handshake_rq = {v: schema_module(f"kio.schema.sasl_handshake.v{v}.request") for v in (0, 1)}
metadata_rq = schema_module("kio.schema.metadata.v12.request")
USERS = {"alice": "alice-secret", "admin": "admin-secret"}


def scram_credentials(users: dict[str, str], iterations: int = 4096) -> dict[tuple[str, int], ScramCredential]:
    found = {}
    for mechanism in scram.MECHANISMS.values():
        for user, password in users.items():
            salt = f"salt-{user}".encode()
            stored, server = scram.credential_from_salted(
                mechanism, scram.salted_password(mechanism, password, salt, iterations))
            found[(user, mechanism.type)] = ScramCredential(salt, stored, server, iterations)
    return found


class Principals:
    """A handler answering every request with its correlation id and the connection's principal."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, info: ConnectionInfo, payload: memoryview) -> bytes:
        correlation = bytes(payload[4:8])
        self.seen.append(str(info.principal))
        return correlation + str(info.principal).encode()


async def sasl_server(mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), reauth_ms=0, delay_ms=0):
    credentials = scram_credentials(USERS)
    config = SaslServerConfig(tuple(mechanisms), plain_users=USERS, scram_lookup=lambda u, m: credentials.get((u, m)),
                              reauth_ms={m: reauth_ms for m in mechanisms}, failed_delay_ms=delay_ms,
                              nonce=lambda: "servernonce")
    handler = Principals()
    server = FrameServer(handler, security=ListenerSecurity(sasl=config), name="sasl-test")
    host, port = await server.start("127.0.0.1", 0)
    return server, handler, host, port


def build(message):
    return lambda cid: encode_request(message, correlation_id=cid, client_id="t")[4:]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_right_password_authenticates_the_principal(mechanism: str) -> None:
    server, handler, host, port = await sasl_server()
    try:
        conn = await Connection.open(host, port, sasl=SaslClientConfig(mechanism, "alice", "alice-secret"))
        answer = await conn.request(build(metadata_rq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                                       include_topic_authorized_operations=False)),
                                    timeout_ms=5000)
        assert answer[4:] == b"User:alice"
        assert server.stats.authentications == 1
        await conn.close()
    finally:
        await server.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_wrong_password_is_refused_and_nothing_is_served(mechanism: str) -> None:
    server, handler, host, port = await sasl_server(delay_ms=20)
    try:
        with pytest.raises(ConnectError, match="SASL authentication .* failed: Authentication failed"):
            await Connection.open(host, port, sasl=SaslClientConfig(mechanism, "alice", "wrong"))
        with pytest.raises(ConnectError, match="failed: Authentication failed"):
            await Connection.open(host, port, sasl=SaslClientConfig(mechanism, "mallory", "alice-secret"))
        assert handler.seen == [] and server.stats.failed_authentications == 2
    finally:
        await server.close()


async def test_a_failed_authentication_is_logged_with_its_reason_and_never_the_password(
        caplog: pytest.LogCaptureFixture) -> None:
    server, _, host, port = await sasl_server()
    try:
        with caplog.at_level("INFO", logger="pykraft.net.server"), pytest.raises(ConnectError):
            await Connection.open(host, port, sasl=SaslClientConfig("PLAIN", "alice", "guessed-pw-123"))
        failures = [r.getMessage() for r in caplog.records if "failed authentication" in r.getMessage()]
        assert len(failures) == 1 and f"from {host}:" in failures[0]
        assert failures[0].endswith("failed authentication (Authentication failed: Invalid username or password)")
        assert "guessed-pw-123" not in caplog.text and "alice-secret" not in caplog.text
    finally:
        await server.close()


async def test_scram_failure_does_not_say_whether_the_user_exists() -> None:
    server, _, host, port = await sasl_server()
    try:
        messages = []
        for user in ("alice", "mallory"):
            with pytest.raises(ConnectError) as caught:
                await Connection.open(host, port, sasl=SaslClientConfig("SCRAM-SHA-256", user, "nope"))
            messages.append(str(caught.value).split("failed: ", 1)[1])
        assert messages[0] == messages[1] == ("Authentication failed during authentication due to invalid "
                                              "credentials with SASL mechanism SCRAM-SHA-256")
    finally:
        await server.close()


async def test_a_mechanism_the_listener_does_not_enable_is_refused() -> None:
    server, _, host, port = await sasl_server(mechanisms=("SCRAM-SHA-512",))
    try:
        with pytest.raises(ConnectError, match=r"'PLAIN' not enabled in the server, enabled mechanisms are "
                                               r"\['SCRAM-SHA-512'\]"):
            await Connection.open(host, port, sasl=SaslClientConfig("PLAIN", "alice", "alice-secret"))
    finally:
        await server.close()


async def test_a_request_before_authentication_closes_the_connection() -> None:
    """A client without SASL on a SASL listener: only ApiVersions is answered, anything else is a disconnect."""
    server, handler, host, port = await sasl_server()
    try:
        conn = await Connection.open(host, port)
        versions = await conn.request(build(versions_rq.ApiVersionsRequest(client_software_name="t",
                                                                           client_software_version="1")),
                                      timeout_ms=5000)
        assert versions[4:] == b"User:ANONYMOUS"  # passed to the handler: the listener's API list
        with pytest.raises(ConnectionClosedError):
            await conn.request(build(metadata_rq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                                 include_topic_authorized_operations=False)),
                               timeout_ms=5000)
        assert len(handler.seen) == 1
    finally:
        await server.close()


async def test_legacy_v0_handshake_with_bare_tokens() -> None:
    server, handler, host, port = await sasl_server()
    try:
        reader, writer = await asyncio.open_connection(host, port)
        frame = build(handshake_rq[0].SaslHandshakeRequest(mechanism="PLAIN"))(7)
        writer.write(struct.pack(">i", len(frame)) + frame)
        answer = decode_response(await _read(reader), 17, 0).message
        assert answer.error_code == 0 and "PLAIN" in answer.mechanisms
        token = b"\0alice\0alice-secret"
        writer.write(struct.pack(">i", len(token)) + token)
        assert await _read(reader) == b""  # PLAIN's empty final token, size-prefixed
        request = build(metadata_rq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                    include_topic_authorized_operations=False))(8)
        writer.write(struct.pack(">i", len(request)) + request)
        assert (await _read(reader))[4:] == b"User:alice"
        writer.close()
    finally:
        await server.close()


async def _read(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def test_reauthentication_renews_the_session_and_a_lapsed_one_is_closed() -> None:
    # Kafka accepts at most one re-authentication a second on a connection: a session of 1.2 s
    server, handler, host, port = await sasl_server(reauth_ms=1200)
    try:
        pool = ConnectionPool(sasl=SaslClientConfig("SCRAM-SHA-256", "alice", "alice-secret"))
        request = build(metadata_rq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                    include_topic_authorized_operations=False))
        for _ in range(16):  # 3.2 s: at least two re-authentications on the same connection
            assert (await pool.request(host, port, request, timeout_ms=5000))[4:] == b"User:alice"
            await asyncio.sleep(0.2)
        assert server.stats.authentications >= 3 and server.stats.connections_accepted == 1
        await pool.close()
        lapsed = await Connection.open(host, port, sasl=SaslClientConfig("PLAIN", "alice", "alice-secret"))
        await asyncio.sleep(1.3)
        with pytest.raises(ConnectionClosedError):
            await lapsed.send_now(request, timeout_ms=5000)  # no re-authentication: the server closes it
        assert server.stats.expired_sessions_killed == 1
    finally:
        await server.close()
