"""Mutual TLS: certificates from a test CA made with the openssl command line (see conftest.certs)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from pykraft.net.client import Connection, ConnectionPool
from pykraft.net.errors import ConnectError, ConnectionClosedError, NetError, TlsConfigError
from pykraft.net.server import FrameServer
from pykraft.net.tls import client_context, server_context

from .conftest import OP_ECHO, Certs, EchoApp, Running, correlation_of, request_bytes, until


@pytest_asyncio.fixture
async def tls_echo(certs: Certs) -> AsyncIterator[Running]:
    app = EchoApp()
    server = FrameServer(app, ssl_context=server_context(certs.node1_cert, certs.node1_key, certs.ca))
    host, port = await server.start("127.0.0.1", 0)
    yield Running(server, app, host, port)
    await server.close()


@pytest.mark.asyncio
async def test_mutual_tls_works_and_exposes_the_peer_subject(tls_echo: Running, certs: Certs) -> None:
    context = client_context(certs.node2_cert, certs.node2_key, certs.ca)
    conn = await Connection.open(tls_echo.host, tls_echo.port, ssl_context=context)
    response = await conn.request(request_bytes(OP_ECHO, 9, b"secret"), timeout_ms=5000)
    assert response[4:] == bytes([OP_ECHO, 9]) + b"secret"
    assert tls_echo.app.infos[0].tls_peer_subject == "CN=node-2,O=pykraft"  # RFC 4514: most specific first
    await conn.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("client", ["wrong", "none"])
async def test_client_without_a_ca_signed_certificate_is_refused(tls_echo: Running, certs: Certs, client: str) -> None:
    if client == "wrong":  # self-signed, even with the same subject as a real node
        context = client_context(certs.wrong_cert, certs.wrong_key, certs.ca)
    else:
        context = client_context(None, None, certs.ca)
    with pytest.raises(ConnectError):
        await Connection.open(tls_echo.host, tls_echo.port, ssl_context=context, connect_timeout_ms=10_000)
    assert tls_echo.app.started == [], "no request of the refused client reached the handler"
    await until(lambda: tls_echo.server.connection_count == 0)
    good = await Connection.open(tls_echo.host, tls_echo.port,
                                 ssl_context=client_context(certs.node2_cert, certs.node2_key, certs.ca))
    assert correlation_of(await good.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    await good.close()


@pytest.mark.asyncio
async def test_client_refuses_a_server_not_signed_by_its_ca(certs: Certs) -> None:
    server = FrameServer(EchoApp(), ssl_context=server_context(certs.wrong_cert, certs.wrong_key, certs.ca))
    host, port = await server.start("127.0.0.1", 0)
    try:
        with pytest.raises(ConnectError):
            await Connection.open(host, port, ssl_context=client_context(certs.node2_cert, certs.node2_key, certs.ca))
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_optional_client_certificate(certs: Certs) -> None:
    app = EchoApp()
    server = FrameServer(app, ssl_context=server_context(certs.node1_cert, certs.node1_key, certs.ca,
                                                         require_client_cert=False))
    host, port = await server.start("127.0.0.1", 0)
    try:
        anonymous = await Connection.open(host, port, ssl_context=client_context(None, None, certs.ca))
        await anonymous.request(request_bytes(OP_ECHO), timeout_ms=5000)
        assert app.infos[0].tls_peer_subject is None
        with pytest.raises(ConnectError):  # a certificate that is presented must still verify
            await Connection.open(host, port, ssl_context=client_context(certs.wrong_cert, certs.wrong_key, certs.ca))
        await anonymous.close()
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_plain_client_against_tls_server_fails_without_hurting_it(tls_echo: Running, certs: Certs) -> None:
    plain = await Connection.open(tls_echo.host, tls_echo.port)  # TCP connects; the server sees no TLS hello
    with pytest.raises(NetError):
        await plain.request(request_bytes(OP_ECHO), timeout_ms=5000)
    await until(lambda: tls_echo.server.connection_count == 0)
    pool = ConnectionPool(ssl_context=client_context(certs.node2_cert, certs.node2_key, certs.ca))
    response = await pool.request(tls_echo.host, tls_echo.port, request_bytes(OP_ECHO), timeout_ms=5000)
    assert correlation_of(response) == 0
    await pool.close()


@pytest.mark.parametrize("broken", ["missing", "garbage"])
def test_bad_pem_paths_raise_tls_config_error(certs: Certs, tmp_path: Path, broken: str) -> None:
    bad = tmp_path / "bad.pem"
    if broken == "garbage":
        bad.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
    cases = [
        lambda: server_context(str(bad), certs.node1_key, certs.ca),
        lambda: server_context(certs.node1_cert, str(bad), certs.ca),
        lambda: server_context(certs.node1_cert, certs.node1_key, str(bad)),
        lambda: client_context(str(bad), certs.node2_key, certs.ca),
        lambda: client_context(None, None, str(bad)),
    ]
    for make in cases:
        with pytest.raises(TlsConfigError) as info:
            make()
        message = str(info.value)
        assert "\n" not in message and str(bad) in message, message


def test_mismatched_key_raises_tls_config_error(certs: Certs) -> None:
    with pytest.raises(TlsConfigError):
        server_context(certs.node1_cert, certs.node2_key, certs.ca)


def test_contexts_require_tls_1_2_and_verify_peers(certs: Certs) -> None:
    server = server_context(certs.node1_cert, certs.node1_key, certs.ca)
    client = client_context(certs.node2_cert, certs.node2_key, certs.ca)
    assert server.minimum_version == ssl.TLSVersion.TLSv1_2 == client.minimum_version
    assert server.verify_mode == ssl.CERT_REQUIRED == client.verify_mode
    assert client.check_hostname is False


@pytest_asyncio.fixture
async def silent_port() -> AsyncIterator[int]:
    """A TCP server that accepts and never says anything: a TLS handshake against it never finishes."""
    held = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


@pytest.mark.asyncio
async def test_connect_timeout_covers_the_tls_handshake(certs: Certs, silent_port: int) -> None:
    context = client_context(certs.node2_cert, certs.node2_key, certs.ca)
    with pytest.raises(ConnectError, match="timed out"):
        await Connection.open("127.0.0.1", silent_port, ssl_context=context, connect_timeout_ms=50)


@pytest.mark.asyncio
async def test_pool_closed_during_a_connect_fails_its_callers_with_connection_closed(
        certs: Certs, silent_port: int) -> None:
    pool = ConnectionPool(ssl_context=client_context(certs.node2_cert, certs.node2_key, certs.ca))
    waiting = asyncio.ensure_future(pool.request("127.0.0.1", silent_port, request_bytes(OP_ECHO), timeout_ms=5000))
    for _ in range(10):
        await asyncio.sleep(0)
    await pool.close()
    with pytest.raises(ConnectionClosedError):
        await waiting
