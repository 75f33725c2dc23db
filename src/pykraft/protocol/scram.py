"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them: the mechanisms with their type ids
and iteration limits (Kafka's `ScramMechanism`), the key derivations (`ScramFormatter`) and the four messages with
Kafka's grammar (`ScramMessages`: gs2 header "n" only, extensions read and ignored but for `tokenauth`).

Pure functions: randomness (nonces, salts) comes in as arguments. The SASL server and client in net/ and the
controller's AlterUserScramCredentials use the same derivations, so a credential written by either verifies with
the other, and with Kafka's clients.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass

__all__ = [
    "MECHANISMS",
    "ClientFinal",
    "ClientFirst",
    "ScramError",
    "ScramMechanism",
    "ServerFinal",
    "ServerFirst",
    "auth_message",
    "client_proof",
    "credential_from_salted",
    "mechanism_by_name",
    "mechanism_by_type",
    "salted_password",
    "sasl_name",
    "server_signature",
    "username_of",
    "verify_client_proof",
]


class ScramError(ValueError):
    """A SCRAM message that does not parse, or a proof that does not verify (no secret in the text)."""


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str  # "SCRAM-SHA-256"
    type: int  # the int8 of UserScramCredentialRecord.Mechanism and the admin APIs
    hash_name: str  # hashlib's name
    min_iterations: int = 4096
    max_iterations: int = 16384

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
_BY_TYPE = {m.type: m for m in MECHANISMS.values()}


def mechanism_by_name(name: str) -> ScramMechanism | None:
    return MECHANISMS.get(name)


def mechanism_by_type(code: int) -> ScramMechanism | None:
    """None for 0 (Kafka's UNKNOWN) or any other code."""
    return _BY_TYPE.get(int(code))


# ---- key derivations ------------------------------------------------------------------------------------------

def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(Normalize(password), salt, i): PBKDF2 with the mechanism's HMAC (Kafka normalizes to UTF-8 only)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted(mechanism: ScramMechanism, salted: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) from a salted password, as the controller stores them."""
    client_key = mechanism.hmac(salted, b"Client Key")
    return mechanism.digest(client_key), mechanism.hmac(salted, b"Server Key")


def auth_message(first: ClientFirst, server_first: ServerFirst, final_without_proof: str) -> bytes:
    return f"{first.bare()},{server_first.message()},{final_without_proof}".encode("utf-8")


def client_proof(mechanism: ScramMechanism, salted: bytes, message: bytes) -> bytes:
    client_key = mechanism.hmac(salted, b"Client Key")
    signature = mechanism.hmac(mechanism.digest(client_key), message)
    return bytes(a ^ b for a, b in zip(client_key, signature, strict=True))


def verify_client_proof(mechanism: ScramMechanism, stored_key: bytes, message: bytes, proof: bytes) -> bool:
    """H(ClientSignature XOR ClientProof) == StoredKey, compared in constant time."""
    signature = mechanism.hmac(stored_key, message)
    if len(signature) != len(proof):
        return False
    computed = mechanism.digest(bytes(a ^ b for a, b in zip(signature, proof, strict=True)))
    return hmac.compare_digest(computed, stored_key)


def server_signature(mechanism: ScramMechanism, server_key: bytes, message: bytes) -> bytes:
    return mechanism.hmac(server_key, message)


# ---- names ----------------------------------------------------------------------------------------------------

def sasl_name(username: str) -> str:
    """RFC 5802's saslname: '=' as '=3D', ',' as '=2C'."""
    return username.replace("=", "=3D").replace(",", "=2C")


def username_of(name: str) -> str:
    """The inverse of sasl_name; ScramError for any other '=' escape (Kafka's ScramFormatter.username)."""
    unescaped = name.replace("=2C", ",")
    if "=" in unescaped.replace("=3D", ""):
        raise ScramError(f"Invalid username: {name}")
    return unescaped.replace("=3D", "=")


# ---- messages (Kafka's ScramMessages grammar) -----------------------------------------------------------------

_SAFE = r"[\x01-\x7F]"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"  # ASCII but ',' (and NUL)
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(?:m={_VALUE},)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<name>{_SASLNAME}),"
                           rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
_SERVER_FIRST = re.compile(rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),"
                           rf"i=(?P<iterations>[0-9]+){_EXTENSIONS}")
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE})(?:{_EXTENSIONS}),"
                           rf"p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE}))?(?:v=(?P<signature>{_BASE64}))?{_EXTENSIONS}")


def _text(data: bytes, what: str) -> str:
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"Invalid SCRAM {what} format: not UTF-8") from None


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ScramError("invalid base64") from None


def _b64e(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class ClientFirst:
    name: str  # saslname as sent (escaped)
    nonce: str
    authzid: str = ""
    extensions: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, data: bytes) -> ClientFirst:
        text = _text(data, "client first message")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise ScramError("Invalid SCRAM client first message format")
        extensions = tuple(tuple(item.split("=", 1)) for item in match["extensions"].split(",")[1:])
        return cls(match["name"], match["nonce"], match["authzid"] or "", extensions)

    def bare(self) -> str:
        ext = "".join(f",{k}={v}" for k, v in self.extensions)
        return f"n={self.name},r={self.nonce}{ext}"

    def gs2_header(self) -> str:
        return f"n,a={self.authzid}," if self.authzid else "n,,"

    def message(self) -> str:
        return self.gs2_header() + self.bare()

    @property
    def token_authenticated(self) -> bool:
        return dict(self.extensions).get("tokenauth", "").lower() == "true"


@dataclass(frozen=True, slots=True)
class ServerFirst:
    nonce: str  # client nonce + server nonce
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, data: bytes) -> ServerFirst:
        match = _SERVER_FIRST.fullmatch(_text(data, "server first message"))
        if match is None:
            raise ScramError("Invalid SCRAM server first message format")
        iterations = int(match["iterations"])
        if iterations <= 0:
            raise ScramError(f"Invalid SCRAM server first message format: invalid iterations {iterations}")
        return cls(match["nonce"], _b64(match["salt"]), iterations)

    def message(self) -> str:
        return f"r={self.nonce},s={_b64e(self.salt)},i={self.iterations}"


@dataclass(frozen=True, slots=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    proof: bytes

    @classmethod
    def parse(cls, data: bytes) -> tuple[ClientFinal, str]:
        """(message, the message without its proof: what the auth message ends with)."""
        text = _text(data, "client final message")
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise ScramError("Invalid SCRAM client final message format")
        without_proof = text[:text.rindex(",p=")]
        return cls(_b64(match["channel"]), match["nonce"], _b64(match["proof"])), without_proof

    @staticmethod
    def without_proof(channel_binding: bytes, nonce: str) -> str:
        return f"c={_b64e(channel_binding)},r={nonce}"

    def message(self) -> str:
        return f"{self.without_proof(self.channel_binding, self.nonce)},p={_b64e(self.proof)}"


@dataclass(frozen=True, slots=True)
class ServerFinal:
    error: str | None
    signature: bytes | None

    @classmethod
    def parse(cls, data: bytes) -> ServerFinal:
        match = _SERVER_FINAL.fullmatch(_text(data, "server final message"))
        if match is None:
            raise ScramError("Invalid SCRAM server final message format")
        signature = match["signature"]
        return cls(match["error"], _b64(signature) if signature is not None else None)

    def message(self) -> str:
        return f"e={self.error}" if self.error is not None else f"v={_b64e(self.signature or b'')}"
