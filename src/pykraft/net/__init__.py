"""asyncio TCP transport with Kafka framing: server, client connections, TLS. Nothing protocol-specific beyond framing and correlation ids."""

from pykraft.net.client import Connection, ConnectionPool
from pykraft.net.errors import (
    ConnectError,
    ConnectionClosedError,
    FrameTooLargeError,
    NetError,
    RequestTimeoutError,
    TlsConfigError,
)
from pykraft.net.server import CloseConnection, ConnectionInfo, FrameServer, Handler, ServerStats
from pykraft.net.tls import client_context, server_context

__all__ = [
    "CloseConnection",
    "ConnectError",
    "Connection",
    "ConnectionClosedError",
    "ConnectionInfo",
    "ConnectionPool",
    "FrameServer",
    "FrameTooLargeError",
    "Handler",
    "NetError",
    "RequestTimeoutError",
    "ServerStats",
    "TlsConfigError",
    "client_context",
    "server_context",
]
