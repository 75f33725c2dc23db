"""The node's TLS contexts and the connection pools of its outbound channels, built from its config for the runtime.

Two channels to the controllers, as Kafka keeps the raft client's apart from the broker-to-controller one (a
forwarded request or a heartbeat must not queue behind a Fetch long-poll: answers come in request order), and on a
broker two to the other brokers (replica fetchers, and the coordinators' requests). A pool whose connections are
secured (TLS or SASL) is wrapped in `TlsFailureLog`, so a refused handshake is logged where the operator sees it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.net.errors import ConnectError
from pykraft.net.pool import ConnectionPool
from pykraft.net.sasl_client import SaslAuthenticationError
from pykraft.net.tls import client_context, server_context

from pykraft.node.runtime.security import client_sasl

_log = logging.getLogger("pykraft.node")


def server_tls(config: Any, listener_name: str) -> Any:
    """The TLS context of a listener this process binds; None when that listener is not SSL or SASL_SSL. A
    SASL_SSL listener asks for client certificates only with its own listener.name.<l>.ssl.client.auth (Kafka)."""
    tls = config.tls
    protocol = config.security_protocol(listener_name)
    if tls is None or protocol not in ("SSL", "SASL_SSL"):
        return None
    required = (tls.client_auth_required if protocol == "SSL"
                else config.security.ssl_client_auth.get(listener_name, False))
    return server_context(tls.cert_path, tls.key_path, tls.ca_path, require_client_cert=required)


def client_tls(config: Any, listener_name: str | None = None) -> Any:
    """The TLS context for connections to `listener_name` (the controller listener this process fetches from
    by default); None when it is neither SSL nor SASL_SSL."""
    tls = config.tls
    if tls is None or config.security_protocol(listener_name or config.controller_listener_name) not in (
            "SSL", "SASL_SSL"):
        return None
    return client_context(tls.cert_path, tls.key_path, tls.ca_path)


class TlsFailureLog:
    """The outbound pool, logging every failed TLS handshake or SASL authentication at WARNING. Outbound logs
    failures at DEBUG, since a peer that is down is routine; a peer that refuses our certificate or our password (or
    offers a certificate we do not trust) is a misconfiguration the operator must see, as Kafka's NetworkClient logs
    a failed authentication. Attempts are paced by the pool's reconnect backoff, so this is at most about one line
    per peer per second."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._last: BaseException | None = None  # callers sharing one connect attempt get the same exception

    async def request(self, host: str, port: int, build: Callable[[int], bytes], *,
                      timeout_ms: int) -> bytes | bytearray:
        try:
            return await self._pool.request(host, port, build, timeout_ms=timeout_ms)
        except ConnectError as exc:
            if exc is not self._last and tls_failure(exc):
                self._last = exc
                _log.warning("TLS handshake with %s:%s failed: %s", host, port, " ".join(str(exc).split()))
            elif exc is not self._last and isinstance(exc.__cause__, SaslAuthenticationError):
                self._last = exc  # the message names the peer: "SASL authentication with host:port failed: ..."
                _log.warning("%s", " ".join(str(exc).split()))
            raise

    def send_now(self, host: str, port: int, build: Callable[[int], bytes], *,
                 timeout_ms: int) -> asyncio.Future[bytes | bytearray] | None:
        return self._pool.send_now(host, port, build, timeout_ms=timeout_ms)  # a live connection: no handshake

    async def close(self) -> None:
        await self._pool.close()


def tls_failure(exc: BaseException | None) -> bool:
    """Whether an SSL error or a TLS rejection (connection.py's wording) is anywhere in the cause chain."""
    while exc is not None:
        if isinstance(exc, ssl.SSLError) or "TLS handshake rejected" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


@dataclass(frozen=True, slots=True)
class PeerPools:
    """The pools of the node's outbound channels (the broker ones None on a node without the broker role)."""
    raft: Any
    forward: Any
    broker: Any
    coordinator: Any


def peer_pools(config: Any, controller_tls: Any, broker_tls: Any) -> PeerPools:
    """The node's outbound pools, with the TLS contexts `client_tls` gave for the controller and broker listeners."""
    controller_sasl = client_sasl(config, config.controller_listener_name)
    raft_pool, forward_pool = (ConnectionPool(ssl_context=controller_tls, sasl=controller_sasl) for _ in range(2))
    broker_sasl = client_sasl(config, config.inter_broker_listener_name) if config.is_broker else None
    broker_pool, coordinator_pool = ((ConnectionPool(ssl_context=broker_tls, sasl=broker_sasl)
                                      if config.is_broker else None) for _ in range(2))
    secured = controller_tls is not None or controller_sasl is not None  # failures worth a WARNING line
    broker_secured = broker_tls is not None or broker_sasl is not None

    def controller_side(pool: ConnectionPool) -> Any:
        return TlsFailureLog(pool) if secured else pool

    def broker_side(pool: ConnectionPool | None) -> Any:
        return TlsFailureLog(pool) if pool is not None and broker_secured else pool
    return PeerPools(controller_side(raft_pool), controller_side(forward_pool), broker_side(broker_pool),
                     broker_side(coordinator_pool))
