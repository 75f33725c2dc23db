"""The client side of SASL (Kafka's `SaslClientAuthenticator`): what a node sends to authenticate its own connections
(to the controllers with `sasl.mechanism.controller.protocol`, to other brokers with
`sasl.mechanism.inter.broker.protocol`) and what the admin tools send (`sasl.mechanism`, `sasl.jaas.config`).

`SaslClientExchange` is the sans-I/O part: SaslHandshake v1, then SaslAuthenticate v2 requests carrying the
mechanism's tokens until it completes; every answer is checked (an error code, a server that fails SCRAM's mutual
authentication) and a failure raises `SaslAuthenticationError` with the server's message. `authenticate` runs it over a
`Connection` (connection.py calls it right after connecting, and again to re-authenticate before the session the
server granted ends).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pykraft.protocol import scram
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.protocol.lazy_schema import schema_module

from pykraft.net.errors import NetError
from pykraft.net.sasl_mechanisms import PLAIN, PlainClient, SaslClientMechanism, SaslFailure, ScramClient

__all__ = ["SaslAuthenticationError", "SaslClientConfig", "SaslClientExchange", "authenticate", "random_nonce"]

handshake_rq = schema_module("kio.schema.sasl_handshake.v1.request")
authenticate_rq = schema_module("kio.schema.sasl_authenticate.v2.request")
_SIZE_PREFIX = 4


class SaslAuthenticationError(NetError):
    """The server refused the credentials or the mechanism, or did not prove itself (SCRAM)."""


@dataclass(frozen=True, slots=True)
class SaslClientConfig:
    mechanism: str  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str
    password: str

    def __repr__(self) -> str:  # the password never reaches a log line
        return f"SaslClientConfig(mechanism={self.mechanism!r}, username={self.username!r}, password=[hidden])"

    def new_mechanism(self, nonce: Callable[[], str]) -> SaslClientMechanism:
        if self.mechanism == PLAIN:
            return PlainClient(self.username, self.password)
        mechanism = scram.mechanism_by_name(self.mechanism)
        if mechanism is None:
            raise SaslAuthenticationError(f"SASL mechanism {self.mechanism} is not supported by pykraft's client "
                                          "(PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
        return ScramClient(mechanism, self.username, self.password, nonce)


def random_nonce() -> str:
    """A SCRAM nonce: printable, no comma (Kafka's is a 130-bit random number in base 36)."""
    return secrets.token_urlsafe(24)


class SaslClientExchange:
    """handshake() -> request; then on_handshake(answer) -> request; then on_authenticate(answer) -> request or
    None when authenticated (`session_lifetime_ms` is then the server's answer: 0 means no re-authentication)."""

    def __init__(self, config: SaslClientConfig, nonce: Callable[[], str] = random_nonce) -> None:
        self.config = config
        self._mechanism = config.new_mechanism(nonce)
        self.session_lifetime_ms = 0
        self._server_done = False

    def handshake(self) -> Any:
        return handshake_rq.SaslHandshakeRequest(mechanism=self.config.mechanism)

    def on_handshake(self, answer: Any) -> Any:
        if int(answer.error_code) == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise SaslAuthenticationError(f"Client SASL mechanism '{self.config.mechanism}' not enabled in the "
                                          f"server, enabled mechanisms are {list(answer.mechanisms)}")
        if int(answer.error_code) != 0:
            raise SaslAuthenticationError(f"SaslHandshake failed with error {ErrorCode(int(answer.error_code)).name}")
        return authenticate_rq.SaslAuthenticateRequest(auth_bytes=self._mechanism.initial())

    def on_authenticate(self, answer: Any) -> Any | None:
        if int(answer.error_code) != 0:
            raise SaslAuthenticationError(answer.error_message or
                                          f"SaslAuthenticate failed with error {ErrorCode(int(answer.error_code)).name}")
        lifetime = getattr(answer, "session_lifetime", None)
        try:
            token = self._mechanism.evaluate(bytes(answer.auth_bytes))
        except SaslFailure as exc:
            raise SaslAuthenticationError(str(exc)) from None
        if token is not None:
            return authenticate_rq.SaslAuthenticateRequest(auth_bytes=token)
        if lifetime is not None:
            self.session_lifetime_ms = int(lifetime.total_seconds() * 1000)
        return None


Requester = Callable[[Callable[[int], bytes]], Awaitable[bytes | bytearray]]


async def authenticate(request: Requester, config: SaslClientConfig, client_id: str = "pykraft") -> int:
    """Authenticate over `request(build)` (a connection's request function); the session lifetime in ms (0: none).
    Raises SaslAuthenticationError on a refusal, NetError when the connection fails."""
    exchange = SaslClientExchange(config)
    message = exchange.handshake()
    answer = await _exchange(request, message, client_id)
    message = exchange.on_handshake(answer)
    while message is not None:
        answer = await _exchange(request, message, client_id)
        message = exchange.on_authenticate(answer)
    return exchange.session_lifetime_ms


async def _exchange(request: Requester, message: Any, client_id: str) -> Any:
    key, version = int(message.__api_key__), int(message.__version__)
    payload = await request(lambda cid: encode_request(message, correlation_id=cid, client_id=client_id)[_SIZE_PREFIX:])
    try:
        return decode_response(payload, key, version).message
    except ProtocolError as exc:
        raise SaslAuthenticationError(f"an unreadable answer during SASL authentication: {exc}") from None
