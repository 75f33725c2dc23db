"""Shared helpers for record-batch tests: strategies and patching of batches built by other codecs."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from pykraft.records import SimpleRecord
from pykraft.records.crc import crc32c

INT64 = st.integers(-(2**63), 2**63 - 1)
TIMESTAMPS = st.integers(0, 2**41)  # milliseconds, up to year ~2039

small_bytes = st.binary(max_size=64)
headers = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), small_bytes)), max_size=3
).map(tuple)


@st.composite
def simple_records(draw, base_timestamp=None):
    ts = draw(st.one_of(st.none(), TIMESTAMPS))
    return SimpleRecord(
        value=draw(st.one_of(st.none(), st.binary(max_size=300))),
        key=draw(st.one_of(st.none(), small_bytes)),
        timestamp_ms=ts,
        headers=draw(headers),
    )


record_lists = st.lists(simple_records(), min_size=1, max_size=20)


def patch_batch(raw: bytes | bytearray, *, base_offset: int, leader_epoch: int, control: bool) -> bytes:
    """Set base offset, leader epoch and the control bit of a batch another codec built, and re-seal its CRC.

    kafka-python's builder always writes base offset 0 and epoch 0 and cannot set the control bit."""
    buf = bytearray(raw)
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    (attributes,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, attributes | 0x20 if control else attributes & ~0x20)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def as_bytes(view):
    return None if view is None else bytes(view)


def decoded(batch):
    return [
        (r.offset, r.timestamp, as_bytes(r.key), as_bytes(r.value), tuple((k, as_bytes(v)) for k, v in r.headers))
        for r in batch.records()
    ]
