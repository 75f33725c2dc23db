"""Kafka's `KafkaPrincipal`: who a connection authenticated as ("User:alice"), as ACLs, `super.users` and the
Envelope a broker forwards a client's request in name it.

- `parse_principal("User:alice")` is Kafka's `SecurityUtils.parseKafkaPrincipal`: type and name split at the first
  colon, both required.
- Equality is on type and name only, as Kafka's `KafkaPrincipal.equals`: a principal authenticated with a delegation
  token is the same principal to the authorizer.
- `serialize_principal` / `deserialize_principal` are `DefaultKafkaPrincipalBuilder`'s serde (the
  `DefaultPrincipalData` message, version-prefixed), which is what an Envelope's RequestPrincipal carries.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.serial import entity_reader, entity_writer

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal", "PrincipalError", "deserialize_principal", "parse_principal",
           "serialize_principal"]

USER_TYPE = "User"
_VERSION = struct.Struct(">h")


class PrincipalError(ValueError):
    """A principal string or serialized principal that cannot be read (one line, Kafka's words)."""


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    type: str
    name: str
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


def parse_principal(text: str) -> KafkaPrincipal:
    """`Type:Name` -> KafkaPrincipal; PrincipalError (Kafka's message) for anything else."""
    if text is None or not text:
        raise PrincipalError(f"expected a string in format principalType:principalName but got {text}")
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise PrincipalError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(kind, name)


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    """DefaultKafkaPrincipalBuilder.serialize: int16 version 0, then DefaultPrincipalData v0."""
    out = io.BytesIO()
    out.write(_VERSION.pack(0))
    entity_writer(DefaultPrincipalData)(out, DefaultPrincipalData(
        type_=principal.type, name=principal.name, token_authenticated=principal.token_authenticated))
    return out.getvalue()


def deserialize_principal(data: bytes) -> KafkaPrincipal:
    """The inverse of serialize_principal; PrincipalError when the bytes are not a version 0 DefaultPrincipalData."""
    if data is None or len(data) < _VERSION.size:
        raise PrincipalError("Failed to deserialize client principal from envelope: too short")
    (version,) = _VERSION.unpack_from(data)
    if version != 0:
        raise PrincipalError(f"Failed to deserialize client principal from envelope: version {version}")
    try:
        view = memoryview(bytes(data)).toreadonly()
        message, size = entity_reader(DefaultPrincipalData)(view, _VERSION.size)
    except Exception as exc:
        raise PrincipalError(f"Failed to deserialize client principal from envelope: {exc}") from None
    if _VERSION.size + size != len(data):
        raise PrincipalError("Failed to deserialize client principal from envelope: trailing bytes")
    return KafkaPrincipal(message.type_, message.name, bool(message.token_authenticated))
