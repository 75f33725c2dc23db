"""Exceptions of the network layer, one tree under `NetError`.

Callers that only want "the peer is unusable right now" catch `NetError`; the subclasses say why, so a
retry policy can tell a refused connection (back off, try another node) from a timeout (the request may
or may not have been processed) from a lost connection.
"""

from __future__ import annotations

__all__ = [
    "ConnectError",
    "ConnectionClosedError",
    "FrameTooLargeError",
    "NetError",
    "RequestTimeoutError",
    "TlsConfigError",
]


class NetError(Exception):
    """Base of every error raised by `pykraft.net`."""


class ConnectError(NetError):
    """Could not connect: refused, unreachable, connect timeout, TLS handshake failure or rejection.

    `ConnectionPool.request` also raises it at once while the address is in its reconnect backoff.
    """


class RequestTimeoutError(NetError):
    """No response within the request timeout. The connection has been closed (as Kafka's NetworkClient
    disconnects on a request timeout), so the request may or may not have been processed by the peer."""


class ConnectionClosedError(NetError):
    """The connection closed, was reset or was found broken while requests were pending or being sent."""


class FrameTooLargeError(NetError):
    """An incoming frame announced a size over the configured limit; the connection has been closed."""

    def __init__(self, message: str, *, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class TlsConfigError(NetError):
    """A certificate, key or CA file is missing, unreadable or not valid PEM (one-line message)."""
