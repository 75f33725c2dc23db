"""The server side of SASL on one connection, sans-I/O (Kafka's `SaslServerAuthenticator` with the re-authentication
of KIP-368): the connection hands it every frame (`receive(frame, now_ms)`) and does what the verdict says.

Before authentication only these may come, in this order (anything else closes the connection, as Kafka does):
1. ApiVersions, once (`Pass`: the request handler answers it with the listener's APIs, Kafka's authenticator does too);
2. SaslHandshake v0 or v1 naming one of the listener's `sasl.enabled.mechanisms` (else UNSUPPORTED_SASL_MECHANISM
   and the connection closes);
3. the mechanism's tokens: after a v1 handshake each in a SaslAuthenticate request (v0-2; any other request answers
   ILLEGAL_SASL_STATE and closes), after a v0 handshake as bare size-prefixed frames (Kafka's legacy format).
A failed authentication answers SASL_AUTHENTICATION_FAILED (v0 handshake: nothing) and closes the connection after
`connection.failed.authentication.delay.ms` (the answer waits too, as Kafka delays it with the close).

Once authenticated the principal is `User:<authorization id>`. With `connections.max.reauth.ms` set for the mechanism
the session lasts that long (SaslAuthenticate v1+ tells the client); a SaslHandshake on an authenticated connection
then starts a re-authentication with the same mechanism and principal (at most once a second), and any other request
after the session expired closes the connection. Without a session lifetime, SaslHandshake and SaslAuthenticate on an
authenticated connection go to the request handler, which answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import datetime
import enum
import logging
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.static.primitive import i64Timedelta

from pykraft.protocol.apis import ApiKey, ApiRegistry, response_class
from pykraft.protocol.codec import DecodedRequest, RequestDecodeFailure, decode_request, encode_response_body
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.protocol.principal import USER_TYPE, KafkaPrincipal
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.message_versions import convert

from pykraft.net.sasl_mechanisms import CredentialLookup, SaslFailure, SaslServerMechanism, server_mechanism

__all__ = ["Answer", "Drop", "Pass", "SaslServerAuthenticator", "SaslServerConfig", "Verdict"]

_log = logging.getLogger("pykraft.net.sasl")
handshake_rs = schema_module("kio.schema.sasl_handshake.v1.response")
authenticate_rs = schema_module("kio.schema.sasl_authenticate.v2.response")
_API_KEY = struct.Struct(">h")
SASL_APIS = ApiRegistry.of({ApiKey.SASL_HANDSHAKE: (0, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)})
MIN_REAUTH_INTERVAL_MS = 1000  # Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


@dataclass(frozen=True, slots=True)
class Pass:
    """Hand the frame to the request handler."""


@dataclass(frozen=True, slots=True)
class Answer:
    """Send `body` (a response frame without its size prefix); with `close`, close the connection after it, the answer
    and the close both `delay_ms` late."""

    body: bytes
    close: bool = False
    delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class Drop:
    """Close the connection now, sending nothing."""

    reason: str


Verdict = Pass | Answer | Drop


@dataclass(frozen=True, slots=True)
class SaslServerConfig:
    """One listener's SASL settings."""

    mechanisms: tuple[str, ...]  # sasl.enabled.mechanisms, in the order the handshake answer lists them
    plain_users: Mapping[str, str] | None = None  # PLAIN: user -> password from the JAAS config
    scram_lookup: CredentialLookup | None = None  # SCRAM: the metadata image's credentials
    reauth_ms: Mapping[str, int] = field(default_factory=dict)  # connections.max.reauth.ms per mechanism (0: off)
    failed_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    max_receive_size: int = 524288  # sasl.server.max.receive.size
    nonce: Callable[[], str] = lambda: ""  # the server nonce of SCRAM (random, from the connection's host)


class _State(enum.Enum):
    INITIAL = "initial"
    HANDSHAKE_REQUEST = "handshake"  # ApiVersions answered
    AUTHENTICATE = "authenticate"
    REAUTH_BAD_MECHANISM = "reauth-bad-mechanism"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslServerAuthenticator:
    def __init__(self, config: SaslServerConfig) -> None:
        self.config = config
        self._state = _State.INITIAL
        self._headers = False  # tokens inside SaslAuthenticate requests (handshake v1)
        self._mechanism: SaslServerMechanism | None = None
        self._reauth_from: tuple[str, KafkaPrincipal] | None = None  # (mechanism, principal) while re-authenticating
        self._last_reauth_ms: int | None = None
        self.principal: KafkaPrincipal | None = None
        self.mechanism_name: str | None = None
        self.session_expiry_ms: int | None = None
        self.successes = 0
        self.failures = 0
        self.last_failure: str | None = None  # what the client was told (or why it was dropped): for the log line

    @property
    def authenticated(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def in_progress(self) -> bool:
        """Whether frames must come here first (and are limited to `max_receive_size`)."""
        return self._state is not _State.COMPLETE

    def receive(self, frame: memoryview, now_ms: int) -> Verdict:
        state = self._state
        if state is _State.FAILED or state is _State.REAUTH_BAD_MECHANISM:
            return self._fail_drop("re-authentication with another mechanism" if state is _State.REAUTH_BAD_MECHANISM
                                   else "authentication failed")
        if len(frame) > self.config.max_receive_size and state is not _State.COMPLETE:
            return self._fail_drop("Failing SASL authentication due to invalid receive size")
        if state is _State.COMPLETE:
            return self._when_authenticated(frame, now_ms)
        if state is _State.AUTHENTICATE:
            return self._token(frame, now_ms)
        key = _api_key(frame)
        if key == ApiKey.API_VERSIONS and state is _State.INITIAL:
            self._state = _State.HANDSHAKE_REQUEST
            return Pass()
        if key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(frame)
        name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
        return self._fail_drop(f"Unexpected Kafka request of type {name} during SASL handshake.")

    # ---- steps -------------------------------------------------------------------------------------------------
    def _when_authenticated(self, frame: memoryview, now_ms: int) -> Verdict:
        expiry = self.session_expiry_ms
        key = _api_key(frame)
        if key == ApiKey.SASL_HANDSHAKE and expiry is not None and (
                self._last_reauth_ms is None or now_ms - self._last_reauth_ms >= MIN_REAUTH_INTERVAL_MS):
            self._last_reauth_ms = now_ms
            assert self.mechanism_name is not None and self.principal is not None
            self._reauth_from = (self.mechanism_name, self.principal)
            self._state = _State.INITIAL
            return self._handshake(frame)
        if expiry is not None and now_ms > expiry:
            return Drop("the SASL session expired without a re-authentication")
        return Pass()

    def _handshake(self, frame: memoryview) -> Verdict:
        decoded = self._decode(frame)
        if not isinstance(decoded, DecodedRequest) or decoded.api_key != ApiKey.SASL_HANDSHAKE:
            return self._fail_drop("a SaslHandshake that cannot be read")
        requested = decoded.message.mechanism
        enabled = self.config.mechanisms
        mechanism = server_mechanism(requested, self.config.plain_users, self.config.scram_lookup, self.config.nonce) \
            if requested in enabled else None
        if mechanism is None:
            answer = self._encode(decoded, _handshake_response(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled))
            self._state = _State.FAILED
            self.failures += 1
            self.last_failure = f"Unsupported SASL mechanism {requested}"
            return Answer(answer, close=True, delay_ms=self.config.failed_delay_ms)
        self._headers = decoded.api_version >= 1
        self._mechanism = mechanism
        reauth = self._reauth_from
        self._state = (_State.REAUTH_BAD_MECHANISM if reauth is not None and reauth[0] != requested
                       else _State.AUTHENTICATE)
        return Answer(self._encode(decoded, _handshake_response(ErrorCode.NONE, enabled)))

    def _token(self, frame: memoryview, now_ms: int) -> Verdict:
        if not self._headers:
            return self._legacy_token(bytes(frame), now_ms)
        decoded = self._decode(frame)
        if isinstance(decoded, RequestDecodeFailure) or decoded is None:
            return self._fail_drop("a request that cannot be read during SASL authentication")
        if decoded.api_key != ApiKey.SASL_AUTHENTICATE:
            # Kafka answers the request itself with ILLEGAL_SASL_STATE, then closes
            self._state, self.failures = _State.FAILED, self.failures + 1
            self.last_failure = f"Unexpected Kafka request of type {decoded.api_key.name} during SASL authentication"
            answer = error_response_for(decoded.message, ErrorCode.ILLEGAL_SASL_STATE, error_message=(
                f"Unexpected Kafka request of type {decoded.api_key.name} during SASL authentication."))
            return Answer(self._encode(decoded, answer), close=True)
        try:
            token = self._evaluate(bytes(decoded.message.auth_bytes))
        except SaslFailure as exc:
            self._state, self.failures = _State.FAILED, self.failures + 1
            self.last_failure = self._failure_text(exc)
            answer = _authenticate_response(ErrorCode.SASL_AUTHENTICATION_FAILED, self.last_failure, b"", 0)
            return Answer(self._encode(decoded, answer), close=True, delay_ms=self.config.failed_delay_ms)
        lifetime = self._complete(now_ms) if self._mechanism is not None and self._mechanism.complete else 0
        return Answer(self._encode(decoded, _authenticate_response(ErrorCode.NONE, None, token, lifetime)))

    def _legacy_token(self, token: bytes, now_ms: int) -> Verdict:
        try:
            answer = self._evaluate(token)
        except SaslFailure as exc:
            return self._fail_drop(self._failure_text(exc))
        if self._mechanism is not None and self._mechanism.complete:
            self._complete(now_ms)
        return Answer(answer)

    def _evaluate(self, token: bytes) -> bytes:
        mechanism = self._mechanism
        assert mechanism is not None
        answer = mechanism.evaluate(token)
        if mechanism.complete and self._reauth_from is not None:
            previous = self._reauth_from[1]
            now = KafkaPrincipal(USER_TYPE, mechanism.authorization_id or "")
            if now != previous:
                raise SaslFailure(f"Cannot change principals during re-authentication from {previous.type}."
                                  f"{previous.name}: {now.type}.{now.name}", public=True)
        return answer

    def _complete(self, now_ms: int) -> int:
        """The authenticated principal and session; the session lifetime in ms (0: no re-authentication)."""
        mechanism = self._mechanism
        assert mechanism is not None and mechanism.authorization_id is not None
        self.principal = KafkaPrincipal(USER_TYPE, mechanism.authorization_id)
        self.mechanism_name = mechanism.name
        self._state = _State.COMPLETE
        self._reauth_from = None
        self._mechanism = None
        self.successes += 1
        lifetime = max(0, int(self.config.reauth_ms.get(mechanism.name, 0)))
        self.session_expiry_ms = now_ms + lifetime if lifetime > 0 else None
        return lifetime

    # ---- helpers -----------------------------------------------------------------------------------------------
    def _failure_text(self, exc: SaslFailure) -> str:
        if exc.public:
            return str(exc)
        what = "re-authentication" if self._reauth_from is not None else "authentication"
        name = self._mechanism.name if self._mechanism is not None else "?"
        _log.debug("SASL %s failed with %s: %s", what, name, exc)
        return f"Authentication failed during {what} due to invalid credentials with SASL mechanism {name}"

    def _fail_drop(self, reason: str) -> Drop:
        if self._state is not _State.FAILED:
            self.failures += 1
            self.last_failure = reason
        self._state = _State.FAILED
        return Drop(reason)

    def _decode(self, frame: memoryview) -> DecodedRequest | RequestDecodeFailure | None:
        try:
            return decode_request(frame, SASL_APIS)
        except ProtocolError:
            return None

    @staticmethod
    def _encode(decoded: DecodedRequest, answer: Any) -> bytes:
        target = response_class(int(answer.__api_key__), decoded.api_version)
        if type(answer) is not target:
            answer = convert(answer, target)
        return bytes(memoryview(encode_response_body(decoded.correlation_id, answer)))  # type: ignore[arg-type]


def _api_key(frame: memoryview) -> int:
    return _API_KEY.unpack_from(frame)[0] if len(frame) >= 2 else -1


def _handshake_response(error: ErrorCode, mechanisms: tuple[str, ...]) -> Any:
    return handshake_rs.SaslHandshakeResponse(error_code=error, mechanisms=tuple(mechanisms))


def _authenticate_response(error: ErrorCode, message: str | None, token: bytes, lifetime_ms: int) -> Any:
    lifetime = i64Timedelta.parse(datetime.timedelta(milliseconds=lifetime_ms))
    return authenticate_rs.SaslAuthenticateResponse(error_code=error, error_message=message, auth_bytes=token,
                                                    session_lifetime=lifetime)
