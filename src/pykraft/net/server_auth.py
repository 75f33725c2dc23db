"""How `FrameServer` authenticates a connection: the listener's security settings, the principal a connection starts
with, and the glue between a connection's frames and its `SaslServerAuthenticator` (sasl_server.py, sans-I/O).

Kept apart from server.py's frame loop: the loop asks `concerns_sasl` whether a frame goes by the authenticator, hands
such a frame to `authenticate_frame`, and acts on the `AuthStep` it gets back (answer it, pass it on to the handler,
or drop the connection). Everything here is synchronous except the delayed answer of a failed authentication.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from pykraft.net.principal import SslPrincipalMapper, ssl_principal
from pykraft.net.sasl_server import Answer, Drop, Pass, SaslServerAuthenticator, SaslServerConfig
from pykraft.protocol.principal import KafkaPrincipal

__all__ = ["AuthStep", "Final", "ListenerSecurity", "answer_later", "authenticate_frame", "concerns_sasl",
           "connection_principal"]

_log = logging.getLogger("pykraft.net.server")
_DEFAULT_MAPPER = SslPrincipalMapper()
_SASL_HANDSHAKE = b"\x00\x11"  # api key 17
_EXPIRED = "the SASL session expired"


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How a listener authenticates its connections: the certificate subject mapping of an SSL listener (None: the
    subject as it is), the SASL settings of a SASL listener (None: no SASL)."""

    ssl_mapper: SslPrincipalMapper | None = None
    sasl: SaslServerConfig | None = None


def connection_principal(subject: str | None, security: ListenerSecurity) -> KafkaPrincipal:
    """Who a connection is before any SASL exchange: User:ANONYMOUS without a client certificate, the mapped subject
    with one. Raises NoMatchingRule when no mapping rule applies (Kafka fails such a connection)."""
    return ssl_principal(subject, security.ssl_mapper or _DEFAULT_MAPPER)


def concerns_sasl(auth: SaslServerAuthenticator, frame: memoryview) -> bool:
    """Whether a frame goes by the connection's authenticator: all of them until it authenticated; after, a
    SaslHandshake (a re-authentication) and, when the session has a lifetime, every request (an expired session is
    closed). Cheap on the hot path: most sessions have no lifetime, and then two bytes are compared."""
    return auth.in_progress or auth.session_expiry_ms is not None or frame[:2] == _SASL_HANDSHAKE


@dataclass(frozen=True, slots=True)
class AuthStep:
    """What one frame did to a connection's authentication: the verdict, how the counters move, and the principal
    the requests after it carry (None: unchanged)."""

    verdict: Answer | Drop | Pass
    succeeded: int
    failed: int
    expired: bool
    principal: KafkaPrincipal | None


def authenticate_frame(auth: SaslServerAuthenticator, frame: memoryview, current: KafkaPrincipal,
                       where: str) -> AuthStep:
    """Give a frame to the connection's authenticator; `where` names the connection in log lines. A failed
    authentication is logged at INFO with the reason the client was given (as Kafka's Selector does), never with
    what the client sent."""
    before = (auth.successes, auth.failures)
    verdict = auth.receive(frame, int(time.monotonic() * 1000))
    failed = auth.failures - before[1]
    if failed:
        _log.info("%s: failed authentication (%s)", where, auth.last_failure)
    expired = False
    if isinstance(verdict, Drop) and verdict.reason.startswith(_EXPIRED):
        expired = True
        _log.info("%s: closing connection: %s", where, verdict.reason)
    principal = auth.principal if auth.authenticated and auth.principal != current else None
    return AuthStep(verdict, auth.successes - before[0], failed, expired, principal)


@dataclass(frozen=True, slots=True)
class Final:
    """The authenticator's last answer on a connection: written, then the connection closes."""

    body: bytes


async def answer_later(answer: Answer) -> bytes | Final:
    """An authenticator's answer as a handler's result, `delay_ms` late (Kafka delays a failed authentication's)."""
    if answer.delay_ms > 0:
        await asyncio.sleep(answer.delay_ms / 1000)
    return Final(answer.body) if answer.close else answer.body
