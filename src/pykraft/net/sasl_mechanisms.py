"""The SASL mechanisms Kafka's brokers offer besides GSSAPI and OAUTHBEARER, both sides, sans-I/O: PLAIN (RFC 4616,
Kafka's `PlainSaslServer` with users from the JAAS config) and SCRAM-SHA-256/512 (Kafka's `ScramSaslServer` /
`ScramSaslClient`, credentials looked up in the metadata image).

A server mechanism takes the client's tokens one at a time (`evaluate`) and returns its own, until `complete`;
`authorization_id` is then the user. A failure raises `SaslFailure`: `public` messages go to the client as Kafka
sends them (PLAIN's "Invalid username or password"), others are replaced by Kafka's generic "Authentication failed
during authentication due to invalid credentials with SASL mechanism X" so that a client cannot learn which users
exist. No password, salt or key is ever part of a message.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pykraft.protocol import scram
from pykraft.protocol.scram import ClientFinal, ClientFirst, ScramError, ServerFinal, ServerFirst

__all__ = ["PLAIN", "PlainClient", "PlainServer", "SaslClientMechanism", "SaslFailure", "SaslServerMechanism",
           "ScramClient", "ScramServer", "server_mechanism"]

PLAIN = "PLAIN"
CredentialLookup = Callable[[str, int], Any]  # (user, SCRAM mechanism type) -> ScramCredential-like or None


class SaslFailure(Exception):
    def __init__(self, message: str, *, public: bool) -> None:
        super().__init__(message)
        self.public = public


class SaslServerMechanism(Protocol):
    name: str
    complete: bool
    authorization_id: str | None

    def evaluate(self, token: bytes) -> bytes: ...


class SaslClientMechanism(Protocol):
    name: str
    complete: bool

    def initial(self) -> bytes: ...

    def evaluate(self, challenge: bytes) -> bytes | None: ...


class PlainServer:
    """authzid NUL authcid NUL passwd, checked against the JAAS `user_<name>="password"` options."""

    name = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN response: not UTF-8", public=True) from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}",
                              public=True)
        authzid, user, password = parts
        if not user:
            raise SaslFailure("Authentication failed: username not specified", public=True)
        if not password:
            raise SaslFailure("Authentication failed: password not specified", public=True)
        expected = self._users.get(user)
        # compare_digest on equal-length digests: the time taken says nothing about the expected password
        if expected is None or not hmac.compare_digest(password.encode("utf-8"), expected.encode("utf-8")):
            raise SaslFailure("Authentication failed: Invalid username or password", public=True)
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different from "
                              "username", public=True)
        self.authorization_id = user
        self.complete = True
        return b""


class ScramServer:
    def __init__(self, mechanism: scram.ScramMechanism, lookup: CredentialLookup, nonce: Callable[[], str]) -> None:
        self.name = mechanism.name
        self._mechanism = mechanism
        self._lookup = lookup
        self._nonce = nonce
        self._first: ClientFirst | None = None
        self._server_first: ServerFirst | None = None
        self._credential: Any = None
        self.complete = False
        self.authorization_id: str | None = None
        self.token_authenticated = False

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._first is None:
                return self._on_first(token)
            if not self.complete and self._server_first is not None:
                return self._on_final(token)
        except ScramError as exc:
            raise SaslFailure(str(exc), public=False) from None
        raise SaslFailure(f"Unexpected challenge in Sasl server state for {self.name}", public=False)

    def _on_first(self, token: bytes) -> bytes:
        first = ClientFirst.parse(token)
        self._first = first
        user = scram.username_of(first.name)
        if first.token_authenticated:
            raise SaslFailure("Token Authentication failed: delegation tokens are not supported", public=False)
        credential = self._lookup(user, self._mechanism.type)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials", public=False)
        if first.authzid and first.authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different from "
                              "username", public=True)
        if credential.iterations < self._mechanism.min_iterations:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum "
                              f"{self._mechanism.min_iterations} for {self.name}", public=False)
        self._credential = credential
        self.authorization_id = user
        self._server_first = ServerFirst(first.nonce + self._nonce(), credential.salt, credential.iterations)
        return self._server_first.message().encode("utf-8")

    def _on_final(self, token: bytes) -> bytes:
        assert self._first is not None and self._server_first is not None
        final, without_proof = ClientFinal.parse(token)
        if not final.nonce.endswith(self._server_first.nonce):
            raise SaslFailure("Invalid client nonce in the final client message.", public=False)
        message = scram.auth_message(self._first, self._server_first, without_proof)
        credential, self._credential = self._credential, None
        if not scram.verify_client_proof(self._mechanism, credential.stored_key, message, final.proof):
            raise SaslFailure("Invalid client credentials", public=False)
        self.complete = True
        signature = scram.server_signature(self._mechanism, credential.server_key, message)
        return ServerFinal(None, signature).message().encode("utf-8")


def server_mechanism(name: str, plain_users: Mapping[str, str] | None, lookup: CredentialLookup | None,
                     nonce: Callable[[], str]) -> SaslServerMechanism | None:
    """A fresh server mechanism for one authentication, or None when `name` is not one this server offers."""
    if name == PLAIN and plain_users is not None:
        return PlainServer(plain_users)
    mechanism = scram.mechanism_by_name(name)
    if mechanism is not None and lookup is not None:
        return ScramServer(mechanism, lookup, nonce)
    return None


class PlainClient:
    name = PLAIN

    def __init__(self, username: str, password: str) -> None:
        self._token = f"\0{username}\0{password}".encode("utf-8")
        self.complete = False

    def initial(self) -> bytes:
        return self._token

    def evaluate(self, challenge: bytes) -> bytes | None:
        self.complete = True
        return None


class ScramClient:
    def __init__(self, mechanism: scram.ScramMechanism, username: str, password: str, nonce: Callable[[], str]) -> None:
        self.name = mechanism.name
        self._mechanism = mechanism
        self._password = password
        self._first = ClientFirst(scram.sasl_name(username), nonce())
        self._expected_signature: bytes | None = None
        self.complete = False

    def initial(self) -> bytes:
        return self._first.message().encode("utf-8")

    def evaluate(self, challenge: bytes) -> bytes | None:
        """The client final message for the server first, then None once the server's signature checked out.
        SaslFailure when the server is not who it should be (bad nonce or signature) or refused."""
        try:
            if self._expected_signature is None:
                return self._on_server_first(challenge)
            final = ServerFinal.parse(challenge)
        except ScramError as exc:
            raise SaslFailure(str(exc), public=True) from None
        if final.error is not None:
            raise SaslFailure(f"Sasl authentication using {self.name} failed with error: {final.error}", public=True)
        if final.signature is None or not hmac.compare_digest(final.signature, self._expected_signature):
            raise SaslFailure("Invalid server signature in server final message", public=True)
        self.complete = True
        return None

    def _on_server_first(self, challenge: bytes) -> bytes:
        server_first = ServerFirst.parse(challenge)
        if not server_first.nonce.startswith(self._first.nonce) or server_first.nonce == self._first.nonce:
            raise ScramError("Invalid server nonce: does not start with client nonce")
        if server_first.iterations < self._mechanism.min_iterations:
            raise ScramError(f"Requested iterations {server_first.iterations} is less than the minimum "
                             f"{self._mechanism.min_iterations} for {self.name}")
        salted = scram.salted_password(self._mechanism, self._password, server_first.salt, server_first.iterations)
        without_proof = ClientFinal.without_proof(self._first.gs2_header().encode("utf-8"), server_first.nonce)
        message = scram.auth_message(self._first, server_first, without_proof)
        proof = scram.client_proof(self._mechanism, salted, message)
        _stored, server_key = scram.credential_from_salted(self._mechanism, salted)
        self._expected_signature = scram.server_signature(self._mechanism, server_key, message)
        return ClientFinal(self._first.gs2_header().encode("utf-8"), server_first.nonce, proof).message().encode()
