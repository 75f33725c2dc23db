"""Kafka's `Uuid` as Python `uuid.UUID`: the text form Kafka prints, and ids generated the way Kafka does.

Kafka prints a uuid as the 16 bytes in URL-safe base64 without padding (22 characters), e.g. the metadata
topic id `AAAAAAAAAAAAAAAAAAAAAQ`. kio decodes the all-zero uuid as `None` (Kafka's `Uuid.ZERO_UUID`, which
means "no id"), so every function here accepts `None` wherever a uuid goes and treats it as the zero uuid.
"""

from __future__ import annotations

import base64
import random
import re
import uuid
from typing import Final

ZERO_UUID: Final = uuid.UUID(int=0)
"""Kafka's `Uuid.ZERO_UUID`: "AAAAAAAAAAAAAAAAAAAAAA". kio reads it as None."""

METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
"""Kafka's `Uuid.METADATA_TOPIC_ID` (= `Uuid.ONE_UUID`), the topic id of `__cluster_metadata`."""

RESERVED_UUIDS: Final = frozenset({ZERO_UUID, METADATA_TOPIC_ID})
"""Ids Kafka's `Uuid.randomUuid()` never returns."""

# 22 characters of the URL-safe alphabet, optionally followed by the two padding characters that a
# 16-byte value gets in padded base64. Java's URL decoder accepts both forms and nothing else.
_KAFKA_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


def uuid_to_kafka_str(value: uuid.UUID | None) -> str:
    """Kafka's `Uuid.toString()`: URL-safe base64 of the 16 bytes, padding stripped."""
    raw = ZERO_UUID.bytes if value is None else value.bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def kafka_str_to_uuid(text: str) -> uuid.UUID:
    """Kafka's `Uuid.fromString()`. Raises ValueError for anything that is not a base64 uuid.

    Like Java's decoder, the 4 unused low bits of the last character are ignored, so a few hand-edited
    strings map to the same uuid; `uuid_to_kafka_str` always produces the canonical one.
    """
    if not isinstance(text, str) or _KAFKA_UUID_TEXT.fullmatch(text) is None:
        raise ValueError(f"not a Kafka uuid (22 characters of URL-safe base64): {text!r}")
    raw = base64.urlsafe_b64decode(text[:22] + "==")
    return uuid.UUID(bytes=raw)


def random_kafka_uuid(rng: random.Random) -> uuid.UUID:
    """A random version-4 uuid as `Uuid.randomUuid()` makes them, drawn from `rng` (deterministic in tests).

    Kafka never hands out the reserved ids, and skips ids whose text starts with "-" because command-line
    parsers take those for options. Newer Kafka also skips ids with a "-" anywhere (KAFKA-20072); we apply
    that stricter rule, whose results are valid ids for every Kafka version.
    """
    while True:
        candidate = uuid.UUID(int=rng.getrandbits(128), version=4)
        if candidate in RESERVED_UUIDS or "-" in uuid_to_kafka_str(candidate):
            continue
        return candidate
