"""`storage format --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'` (Kafka's ScramParser): a SCRAM
credential written into `bootstrap.checkpoint`, so that the first active controller puts it in the metadata log and
the first clients and brokers can authenticate before anyone could have run AlterUserScramCredentials.

Each argument is `MECHANISM=[name=N,password=P]` with optional `iterations=I` (4096 by default, 4096-16384) and
`salt=<base64>`, or `saltedpassword=<base64>` with `salt` instead of `password`; an unknown key is refused. The
record holds the salt, StoredKey and ServerKey as Kafka's controller stores them, never the password. Error messages
are Kafka's FormatterException texts.
"""

from __future__ import annotations

import base64
import binascii
import random

from kio.static.primitive import i8, i32

from pykraft.protocol import scram
from pykraft.records.metadata.schema.user_scram_credential_record import UserScramCredentialRecordV0

from .format_options import FormatError

__all__ = ["DEFAULT_ITERATIONS", "SCRAM_METADATA_VERSION", "parse_scram"]

DEFAULT_ITERATIONS = 4096
SCRAM_METADATA_VERSION = 11  # 3.5-IV2: MetadataVersion.isScramSupported


def _components(text: str) -> dict[str, str]:
    found = {}
    for component in text.split(","):
        key, sep, value = component.partition("=")
        if not sep:
            raise FormatError(f"No equals sign found in SCRAM component: {component}")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        found[key] = value
    return found


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise FormatError(f"Failed to decode given {what}: {text}") from None


def kafka_salt(rng: random.Random) -> bytes:
    """Kafka's ScramFormatter.secureRandomBytes: a 130-bit random number in base 36, as ASCII."""
    number, digits = rng.getrandbits(130), ""
    while number:
        number, digit = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
    return (digits or "0").encode("ascii")


def parse_scram(argument: str, rng: random.Random) -> UserScramCredentialRecordV0:
    text = argument.strip()
    mechanism_name, sep, config = text.partition("=")
    if not sep:
        raise FormatError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = scram.mechanism_by_name(mechanism_name)
    if mechanism is None:
        raise FormatError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise FormatError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise FormatError("Expected configuration string to end with ]")
    components = _components(config[1:-1])
    name = components.pop("name", None)
    if name is None:
        raise FormatError("You must supply 'name' to add-scram")
    salt_text, iterations_text = components.pop("salt", None), components.pop("iterations", None)
    password, salted_text = components.pop("password", None), components.pop("saltedpassword", None)
    if password is None and salted_text is None:
        raise FormatError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if password is None and salt_text is None:
        raise FormatError("You must supply 'salt' with 'saltedpassword' to add-scram")
    if components:
        raise FormatError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    salt = _b64(salt_text, "salt") if salt_text is not None else kafka_salt(rng)
    try:
        iterations = int(iterations_text) if iterations_text is not None else DEFAULT_ITERATIONS
    except ValueError:
        raise FormatError(f"Failed to parse iterations count: {iterations_text}") from None
    if iterations < mechanism.min_iterations:
        raise FormatError(f"The 'iterations' value must be >= {mechanism.min_iterations} for add-scram using "
                          f"{mechanism.name.replace('-', '_')}")
    if iterations > mechanism.max_iterations:
        raise FormatError(f"The 'iterations' value must be <= {mechanism.max_iterations} for add-scram using "
                          f"{mechanism.name.replace('-', '_')}")
    salted = (_b64(salted_text or "", "saltedPassword") if password is None
              else scram.salted_password(mechanism, password, salt, iterations))
    stored, server = scram.credential_from_salted(mechanism, salted)
    return UserScramCredentialRecordV0(name=name, mechanism=i8(mechanism.type), salt=salt, stored_key=stored,
                                       server_key=server, iterations=i32(iterations))
