"""Shared fixtures for the network tests: certificates made with the openssl command line, a tiny echo
protocol (the request payload is an int32 correlation id followed by an opcode byte and an argument),
and helpers to start servers on ephemeral 127.0.0.1 ports."""

from __future__ import annotations

import asyncio
import struct
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio

from pykraft.net.server import CloseConnection, ConnectionInfo, FrameServer

OPENSSL = "/usr/bin/openssl"
_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True, slots=True)
class Certs:
    ca: str
    node1_cert: str
    node1_key: str
    node2_cert: str
    node2_key: str
    wrong_cert: str  # self-signed, not issued by the CA
    wrong_key: str


def _openssl(*args: str) -> None:
    subprocess.run([OPENSSL, *args], check=True, capture_output=True)


def _node_cert(tmp: Path, name: str, subject: str) -> tuple[str, str]:
    key, csr, cert = tmp / f"{name}.key", tmp / f"{name}.csr", tmp / f"{name}.pem"
    _openssl("req", "-new", *_EC, "-keyout", str(key), "-out", str(csr), "-subj", subject)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(tmp / "ca.pem"), "-CAkey", str(tmp / "ca.key"),
             "-CAcreateserial", "-days", "2", "-out", str(cert))
    return str(cert), str(key)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    tmp = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", *_EC, "-keyout", str(tmp / "ca.key"), "-out", str(tmp / "ca.pem"),
             "-days", "2", "-subj", "/CN=pykraft-test-ca")
    node1 = _node_cert(tmp, "node-1", "/O=pykraft/CN=node-1")
    node2 = _node_cert(tmp, "node-2", "/O=pykraft/CN=node-2")
    _openssl("req", "-x509", *_EC, "-keyout", str(tmp / "wrong.key"), "-out", str(tmp / "wrong.pem"),
             "-days", "2", "-subj", "/CN=node-2")
    return Certs(str(tmp / "ca.pem"), *node1, *node2, str(tmp / "wrong.pem"), str(tmp / "wrong.key"))


# ---- the echo protocol ----

OP_ECHO = 0  # answer at once
OP_WAIT = 1  # wait until the test sets the named gate, then answer
OP_FAIL = 2  # raise RuntimeError
OP_CLOSE = 3  # raise CloseConnection
OP_SILENT = 4  # return None (no response)
OP_HANG = 5  # never answer
OP_BAD_ID = 6  # answer with a wrong correlation id
OP_NOT_BYTES = 7  # return a str (a handler bug)
OP_BIG = 8  # answer with arg MiB of zeros after the echoed header

_REQUEST = struct.Struct(">iBB")


def request_bytes(op: int, arg: int = 0, extra: bytes = b"") -> object:
    """A `build` callable for Connection.request."""
    return lambda correlation_id: _REQUEST.pack(correlation_id, op, arg) + extra


def correlation_of(response: bytes) -> int:
    return struct.unpack_from(">i", response)[0]


class EchoApp:
    """The server-side handler; records what it saw so tests can assert on it."""

    def __init__(self) -> None:
        self.gates: dict[int, asyncio.Event] = {}
        self.started: list[int] = []  # correlation ids in handler start order
        self.infos: list[ConnectionInfo] = []
        self.cancelled = 0

    def gate(self, n: int) -> asyncio.Event:
        return self.gates.setdefault(n, asyncio.Event())

    async def __call__(self, info: ConnectionInfo, payload: memoryview) -> bytes | None:
        correlation_id, op, arg = _REQUEST.unpack_from(payload)
        self.started.append(correlation_id)
        self.infos.append(info)
        try:
            if op == OP_WAIT:
                await self.gate(arg).wait()
            elif op == OP_FAIL:
                raise RuntimeError("handler bug")
            elif op == OP_CLOSE:
                raise CloseConnection()
            elif op == OP_SILENT:
                return None
            elif op == OP_HANG:
                await asyncio.Event().wait()
            elif op == OP_BAD_ID:
                return struct.pack(">i", correlation_id + 1000) + bytes(payload[4:])
            elif op == OP_NOT_BYTES:
                return "not bytes"  # type: ignore[return-value]
            elif op == OP_BIG:
                return bytes(payload) + bytes(arg << 20)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return bytes(payload)


@pytest_asyncio.fixture(autouse=True)
async def no_loop_errors() -> AsyncIterator[list[dict[str, object]]]:
    """Fail any test during which a callback raised into the event loop (asyncio only logs those)."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield errors
    loop.set_exception_handler(None)
    assert errors == [], f"exceptions reached the event loop: {errors}"


@dataclass
class Running:
    server: FrameServer
    app: EchoApp
    host: str
    port: int


@pytest_asyncio.fixture
async def echo() -> AsyncIterator[Running]:
    app = EchoApp()
    server = FrameServer(app, max_frame_bytes=1024, name="echo")
    host, port = await server.start("127.0.0.1", 0)
    yield Running(server, app, host, port)
    await server.close()


async def until(condition, what: str = "condition") -> None:
    """Let the event loop run until `condition()` holds (bounded by iterations, not by a duration)."""
    for _ in range(20_000):
        if condition():
            return
        await asyncio.sleep(0.001 if _ > 100 else 0)
    raise AssertionError(f"{what} never became true")
