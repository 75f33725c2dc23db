"""Bad bytes never escape as anything but MetadataRecordError: random values, values behind a valid frame header,
truncations, bit flips, byte insertions and deletions of valid encodings, and hostile length prefixes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.records.metadata import (
    MetadataRecordError,
    TruncatedMetadataRecordError,
    decode_metadata_record,
    encode_metadata_record,
)
from pykraft.records.metadata.registry import codec_for_class

from .metadata_strategies import ALL_RECORD_CLASSES, record_strategy

_FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_HEADERS = st.sampled_from([codec_for_class(cls).header for cls in ALL_RECORD_CLASSES])
_VALID_VALUES = st.sampled_from(ALL_RECORD_CLASSES).flatmap(record_strategy).map(encode_metadata_record)


def _decode_or_metadata_error(value: bytes) -> object | None:
    """Decode; a MetadataRecordError is an acceptable outcome, any other exception fails the test."""
    try:
        return decode_metadata_record(value)
    except MetadataRecordError:
        return None


@_FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(value: bytes) -> None:
    _decode_or_metadata_error(value)


@_FUZZ
@given(_HEADERS, st.binary(max_size=300))
def test_random_body_behind_a_valid_header(header: bytes, body: bytes) -> None:
    record = _decode_or_metadata_error(header + body)
    if record is not None:
        # whatever decodes must be a record that encodes again
        assert encode_metadata_record(record)[: len(header)] == header


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALID_VALUES)
def test_every_proper_prefix_is_truncated(value: bytes) -> None:
    for cut in range(len(value)):
        with pytest.raises(TruncatedMetadataRecordError):
            decode_metadata_record(value[:cut])


@_FUZZ
@given(_VALID_VALUES, st.data())
def test_bit_flips(value: bytes, data: st.DataObject) -> None:
    flips = data.draw(st.lists(st.integers(0, len(value) * 8 - 1), min_size=1, max_size=3))
    mutated = bytearray(value)
    for bit in flips:
        mutated[bit // 8] ^= 1 << (bit % 8)
    _decode_or_metadata_error(bytes(mutated))


@_FUZZ
@given(_VALID_VALUES, st.data())
def test_inserted_and_deleted_bytes(value: bytes, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(value)))
    inserted = data.draw(st.binary(min_size=1, max_size=8))
    _decode_or_metadata_error(value[:position] + inserted + value[position:])
    if position < len(value):
        _decode_or_metadata_error(value[:position] + value[position + 1:])


# Hostile length prefixes. Without the bounds walk, kio 0.6.5 pre-allocates the array and the whole process
# aborts ("memory allocation of 34359738352 bytes failed"), so these run in a child process: a regression
# shows up as a failed test instead of killing the test run.
_HOSTILE_SCRIPT = textwrap.dedent(
    """
    from pykraft.records.metadata import decode_metadata_record, MetadataRecordError
    HUGE = bytes.fromhex("ffffffff0f")   # unsigned varint 2**32 - 1: more than a Java int can hold
    BIG = bytes.fromhex("ffffff7f")      # unsigned varint 2**28 - 1: a valid length, far past the data
    UUID = bytes(16)
    cases = {
        # PartitionRecord v2: partition id, topic id, then the Replicas array length
        "partition replicas": bytes([1, 3, 2]) + bytes(4) + UUID + HUGE,
        "partition replicas big": bytes([1, 3, 2]) + bytes(4) + UUID + BIG,
        # RegisterBrokerRecord v3: id, zk flag, incarnation id, epoch, then the EndPoints array of structs
        "broker endpoints": bytes([1, 0, 3]) + bytes(4) + b"\\x00" + UUID + bytes(8) + HUGE,
        "broker endpoints big": bytes([1, 0, 3]) + bytes(4) + b"\\x00" + UUID + bytes(8) + BIG,
        # PartitionChangeRecord v0: one tagged field, Isr (tag 0), whose array length is too big
        "tagged isr": bytes([1, 5, 0]) + bytes(4) + UUID + bytes([1, 0, 5]) + HUGE,
        "tagged isr big": bytes([1, 5, 0]) + bytes(4) + UUID + bytes([1, 0, 4]) + BIG,
        # ClientQuotaRecord v0: Entity array of structs
        "quota entities": bytes([1, 14, 0]) + BIG,
        # DelegationTokenRecord v0: owner "", requester "", then the Renewers array of strings
        "token renewers": bytes([1, 10, 0, 1, 1]) + BIG,
        # a huge tagged-field count
        "tag count": bytes([1, 20, 0]) + BIG,
    }
    for name, value in cases.items():
        try:
            decode_metadata_record(value)
            print(name, "decoded")
        except MetadataRecordError as exc:
            print(name, type(exc).__name__)
    """
)


def test_hostile_lengths_are_refused_before_kio_allocates() -> None:
    result = subprocess.run([sys.executable, "-c", _HOSTILE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    outcome = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    assert outcome == {
        "partition replicas": "MalformedMetadataRecordError",
        "partition replicas big": "TruncatedMetadataRecordError",
        "broker endpoints": "MalformedMetadataRecordError",
        "broker endpoints big": "TruncatedMetadataRecordError",
        "tagged isr": "MalformedMetadataRecordError",
        "tagged isr big": "TruncatedMetadataRecordError",
        "quota entities": "TruncatedMetadataRecordError",
        "token renewers": "TruncatedMetadataRecordError",
        "tag count": "TruncatedMetadataRecordError",
    }
