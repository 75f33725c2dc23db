"""Kafka uuid text form and random ids (pykraft.records.uuids)."""

from __future__ import annotations

import random
import re
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.records.uuids import (
    METADATA_TOPIC_ID,
    RESERVED_UUIDS,
    ZERO_UUID,
    kafka_str_to_uuid,
    random_kafka_uuid,
    uuid_to_kafka_str,
)


def test_well_known_ids() -> None:
    assert uuid_to_kafka_str(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_to_kafka_str(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_kafka_str(None) == "AAAAAAAAAAAAAAAAAAAAAA"  # kio's spelling of the zero uuid
    assert kafka_str_to_uuid("AAAAAAAAAAAAAAAAAAAAAQ") == METADATA_TOPIC_ID


def test_url_safe_alphabet() -> None:
    all_ones = uuid.UUID(int=2**128 - 1)
    assert uuid_to_kafka_str(all_ones) == "_____________________w"
    assert kafka_str_to_uuid("_____________________w") == all_ones
    assert uuid_to_kafka_str(uuid.UUID(bytes=bytes([0xFB] * 16))) == "-_v7-_v7-_v7-_v7-_v7-w"


@given(st.uuids())
def test_text_round_trip(value: uuid.UUID) -> None:
    text = uuid_to_kafka_str(value)
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", text)
    assert kafka_str_to_uuid(text) == value
    assert kafka_str_to_uuid(text + "==") == value  # Java's decoder also takes the padded form


@pytest.mark.parametrize("text", [
    "", "AAAA", "AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA=",
    "+AAAAAAAAAAAAAAAAAAAAA", "/AAAAAAAAAAAAAAAAAAAAA", " AAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAA\n",
    "00000000-0000-0000-0000-000000000001",
])
def test_rejects_text_that_is_not_a_kafka_uuid(text: str) -> None:
    with pytest.raises(ValueError):
        kafka_str_to_uuid(text)


def test_rejects_non_strings() -> None:
    with pytest.raises(ValueError):
        kafka_str_to_uuid(b"AAAAAAAAAAAAAAAAAAAAAQ")  # type: ignore[arg-type]


def test_random_ids_are_deterministic_per_seed_and_look_like_kafkas() -> None:
    first = [random_kafka_uuid(random.Random(7)) for _ in range(3)]
    assert first[0] == first[1] == first[2]
    rng = random.Random(11)
    ids = [random_kafka_uuid(rng) for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        assert value.version == 4 and value.variant == uuid.RFC_4122
        assert value not in RESERVED_UUIDS
        assert "-" not in uuid_to_kafka_str(value)


def test_random_ids_skip_ids_with_a_dash() -> None:
    """A generator that first yields an id whose text has a dash must move on to the next one."""

    class Scripted(random.Random):
        def __init__(self, values: list[int]) -> None:
            super().__init__(0)
            self.values = values

        def getrandbits(self, k: int) -> int:
            return self.values.pop(0)

    dashed = int.from_bytes(bytes([0xFB] * 16), "big")
    plain = 0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0
    assert "-" in uuid_to_kafka_str(uuid.UUID(int=dashed, version=4))
    chosen = random_kafka_uuid(Scripted([dashed, plain]))
    assert chosen == uuid.UUID(int=plain, version=4)
