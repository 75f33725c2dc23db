"""The batch iterator tells a torn tail from a CRC mismatch from a malformed batch, and raises nothing else."""

from __future__ import annotations

import builtins
import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykraft.records import (
    Compression,
    CorruptBatchError,
    MalformedBatchError,
    RecordsError,
    SimpleRecord,
    TruncatedBatchError,
    UnsupportedCompressionError,
    encode_batch,
    iter_batches,
)
from pykraft.records.compression import compress

from .batch_helpers import patch_batch

FIRST = encode_batch([SimpleRecord(b"first", key=b"k")], base_offset=0, partition_leader_epoch=1, timestamp_ms=10)
SECOND = encode_batch([SimpleRecord(b"second")] * 3, base_offset=1, partition_leader_epoch=1, timestamp_ms=20)
SEGMENT = FIRST + SECOND


def scan(data, **kwargs):
    """Collect (base offsets yielded, error raised or None)."""
    seen = []
    try:
        for batch in iter_batches(data, **kwargs):
            seen.append(batch.base_offset)
    except RecordsError as exc:
        return seen, exc
    return seen, None


@pytest.mark.parametrize("cut", range(len(FIRST) + 1, len(SEGMENT)))
def test_a_cut_inside_the_last_batch_is_a_truncated_tail(cut):
    seen, error = scan(SEGMENT[:cut])
    assert seen == [0]
    assert isinstance(error, TruncatedBatchError)
    assert error.position == len(FIRST)


@pytest.mark.parametrize("cut", [len(FIRST) + 3, len(FIRST) + 40, len(SEGMENT) - 1])
def test_fetch_responses_may_end_in_a_partial_batch(cut):
    assert scan(SEGMENT[:cut], allow_truncated_tail=True) == ([0], None)


@pytest.mark.parametrize("index", range(21, len(FIRST)))
def test_a_flipped_bit_under_the_crc_is_corruption(index):
    damaged = bytearray(SEGMENT)
    damaged[index] ^= 0x04
    seen, error = scan(damaged)
    assert seen == [] and isinstance(error, CorruptBatchError)
    assert error.position == 0 and error.base_offset == 0


@pytest.mark.parametrize("index", [17, 18, 19, 20])
def test_a_flipped_bit_in_the_stored_crc_is_corruption(index):
    damaged = bytearray(SEGMENT)
    damaged[index] ^= 0x80
    assert isinstance(scan(damaged)[1], CorruptBatchError)


def test_corruption_is_reported_at_the_second_batch_position():
    damaged = bytearray(SEGMENT)
    damaged[len(FIRST) + 30] ^= 0x01
    seen, error = scan(damaged)
    assert seen == [0] and isinstance(error, CorruptBatchError) and error.position == len(FIRST)


def test_crc_check_can_be_skipped():
    damaged = bytearray(SEGMENT)
    damaged[40] ^= 0x01
    assert scan(damaged, verify_crc=False) == ([0, 1], None)


def test_wrong_magic_is_malformed():
    damaged = bytearray(SEGMENT)
    damaged[16] = 1
    seen, error = scan(damaged)
    assert isinstance(error, MalformedBatchError) and "magic" in str(error)


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_impossible_length_is_malformed(length):
    damaged = bytearray(SEGMENT)
    struct.pack_into(">i", damaged, 8, length)
    assert isinstance(scan(damaged)[1], MalformedBatchError)


def test_huge_length_at_the_tail_is_a_truncation_not_an_allocation():
    damaged = bytearray(FIRST)
    struct.pack_into(">i", damaged, 8, 2**31 - 1)
    assert isinstance(scan(damaged)[1], TruncatedBatchError)


def reseal(raw: bytes, body: bytes, count: int | None = None) -> bytes:
    """A batch with the given records section and a valid CRC: garbage that only record parsing can catch."""
    buf = bytearray(raw[:61] + body)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    if count is not None:
        struct.pack_into(">i", buf, 57, count)
    return patch_batch(buf, base_offset=0, leader_epoch=0, control=False)


@pytest.mark.parametrize(
    "body,count",
    [
        (b"", 1),  # fewer records than the count says
        (bytes([0x0E, 0, 0, 0, 1, 2]) + b"v" + bytes([0]) + b"extra", 1),  # bytes after the last record
        (bytes([0x7F]) + b"\x00" * 8, 1),  # record length beyond the batch
        (bytes([0x0E, 0, 0, 0, 1, 0x40]) + b"v" + bytes([0]), 1),  # value length beyond the record
        (bytes([0x0E, 0, 0, 0, 1, 2]) + b"v" + bytes([0x7F]), 1),  # absurd header count
        (bytes([0x0E, 0, 0, 0, 3, 2]) + b"v" + bytes([0]), 1),  # key length -2
        (b"\xff" * 12, 1),  # over-long varint
    ],
)
def test_garbage_records_with_a_valid_crc_are_malformed(body, count):
    (batch,) = list(iter_batches(reseal(FIRST, body, count)))
    with pytest.raises(MalformedBatchError):
        list(batch.records())


def test_missing_codec_library_is_named(monkeypatch):
    raw = reseal(FIRST, compress(Compression.GZIP, FIRST[61:]))
    buf = bytearray(raw)
    struct.pack_into(">h", buf, 21, Compression.SNAPPY)
    raw = patch_batch(buf, base_offset=0, leader_epoch=0, control=False)
    real_import = builtins.__import__

    def no_snappy(name, *args, **kwargs):
        if name == "snappy":
            raise ImportError("No module named 'snappy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_snappy)
    monkeypatch.delitem(__import__("sys").modules, "snappy", raising=False)
    (batch,) = list(iter_batches(raw))
    with pytest.raises(UnsupportedCompressionError, match="python-snappy"):
        list(batch.records())


def test_unknown_codec_id_is_unsupported():
    buf = bytearray(FIRST)
    struct.pack_into(">h", buf, 21, 5)
    (batch,) = list(iter_batches(patch_batch(buf, base_offset=0, leader_epoch=0, control=False)))
    with pytest.raises(UnsupportedCompressionError, match="5"):
        list(batch.records())


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_garbage_compressed_payload_is_malformed(codec):
    buf = bytearray(reseal(FIRST, b"not compressed at all" * 3))
    struct.pack_into(">h", buf, 21, codec)
    (batch,) = list(iter_batches(patch_batch(buf, base_offset=0, leader_epoch=0, control=False)))
    with pytest.raises(MalformedBatchError):
        list(batch.records())


def decode_everything(data):
    for batch in iter_batches(data):
        for record in batch.records():
            pass


@given(st.binary(max_size=400))
@example(SEGMENT)
@settings(max_examples=300)
def test_random_bytes_raise_only_records_errors(data):
    try:
        decode_everything(data)
    except RecordsError:
        pass


@given(st.data())
@settings(max_examples=300)
def test_bit_flips_and_cuts_raise_only_records_errors(data):
    buf = bytearray(SEGMENT)
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(buf) - 1))
        buf[index] ^= 1 << data.draw(st.integers(0, 7))
    buf = buf[: data.draw(st.integers(0, len(buf)))]
    verify = data.draw(st.booleans())
    try:
        for batch in iter_batches(buf, verify_crc=verify):
            list(batch.records())
    except RecordsError:
        pass
