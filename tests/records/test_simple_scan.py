"""records/simple_scan.py against the full decode: a batch the fast walk accepts is one `RecordBatch.records`
accepts, with the same offsets and values; every batch, good, odd or corrupted, gets the same verdict from
`plain_batches` and `metadata_records` as from the full decode they used before."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kio.static.primitive import i16

from pykraft.controller.log_replay import decode_value, metadata_records
from pykraft.node.runtime.writes import plain_batches
from pykraft.records import BATCH_HEADER_SIZE, RecordBatch, RecordsError, SimpleRecord, encode_batch, iter_batches
from pykraft.records.crc import crc32c
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.simple_scan import encode_values, simple_values
from pykraft.records.varint import read_varint

NOW = 1_700_000_000_000


def batch_of(raw: bytes | bytearray) -> RecordBatch:
    (batch,) = iter_batches(raw, verify_crc=False)
    return batch


def full_decode(batch: RecordBatch) -> list[tuple] | str:
    """The old judge: every record decoded, or the error it raises."""
    try:
        return [(r.offset, r.timestamp, r.key, None if r.value is None else bytes(r.value), r.headers)
                for r in batch.records()]
    except RecordsError as exc:
        return f"{type(exc).__name__}: {exc}"


def old_plain_batches(records: bytes) -> list[tuple[bytes, int]] | None | str:
    """plain_batches as it was: the header checks, then every record decoded."""
    plain = []
    try:
        for batch in iter_batches(records):
            if batch.is_control:
                raise RecordsError("control batches cannot be produced")
            count = batch.record_count
            if (batch.attributes != 0 or batch.producer_id != -1 or batch.producer_epoch != -1
                    or batch.base_sequence != -1 or count < 1 or batch.last_offset_delta != count - 1):
                return None
            decoded = list(batch.records())
            if any(r.offset != batch.base_offset + i or r.timestamp != batch.base_timestamp
                   for i, r in enumerate(decoded)):
                return None
            plain.append((bytes(batch.buffer), count))
    except RecordsError as exc:
        return f"{type(exc).__name__}: {exc}"
    return plain or "RecordsError: no records"


def new_plain_batches(records: bytes) -> list[tuple[bytes, int]] | None | str:
    try:
        plain = plain_batches(records)
    except RecordsError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if plain is None else [(bytes(view), count) for view, count in plain]


def record_bounds(raw: bytes | bytearray) -> tuple[list[int], list[int]]:
    """Where each record of a well-formed batch starts and ends."""
    starts, ends, pos = [], [], BATCH_HEADER_SIZE
    while pos < len(raw):
        length, body = read_varint(raw, pos)
        starts.append(pos)
        pos = body + length
        ends.append(pos)
    return starts, ends


def reseal(buf: bytearray) -> bytes:
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


record_values = st.one_of(st.binary(max_size=20), st.binary(min_size=60, max_size=300),
                          st.just(b"x" * 9000), st.none())
records = st.builds(SimpleRecord, value=record_values,
                    key=st.one_of(st.none(), st.none(), st.binary(max_size=4)),
                    timestamp_ms=st.one_of(st.none(), st.none(), st.integers(NOW - 10, NOW + 10)),
                    headers=st.one_of(st.just(()), st.just((("h", b"v"),))))
simple_record = st.builds(SimpleRecord, value=st.binary(max_size=200))


@st.composite
def batches(draw) -> bytes:
    """A batch, usually of the simple shape, sometimes not; then sometimes corrupted and re-sealed."""
    if draw(st.booleans()):
        recs = draw(st.lists(simple_record, min_size=1, max_size=80))
    else:
        recs = draw(st.lists(records, min_size=1, max_size=12))
    buf = bytearray(encode_batch(recs, base_offset=draw(st.integers(0, 1000)), partition_leader_epoch=3,
                                 timestamp_ms=NOW))
    starts, ends = record_bounds(buf)
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(["framing", "framing", "byte", "cut", "grow", "count"]))
        if how == "framing":  # a byte of a record's framing: its first seven or its last (the header count)
            i = draw(st.integers(0, len(starts) - 1))
            at = draw(st.one_of(st.integers(starts[i], starts[i] + 6), st.just(ends[i] - 1)))
            if at < len(buf):
                buf[at] = draw(st.one_of(st.integers(0, 255), st.integers(0, 4)))
        elif how == "byte" and len(buf) > BATCH_HEADER_SIZE:
            buf[draw(st.integers(BATCH_HEADER_SIZE, len(buf) - 1))] = draw(st.integers(0, 255))
        elif how == "cut" and len(buf) > BATCH_HEADER_SIZE:
            del buf[len(buf) - draw(st.integers(1, min(8, len(buf) - BATCH_HEADER_SIZE))):]
        elif how == "grow":
            buf += draw(st.binary(min_size=1, max_size=4))
        elif how == "count":
            struct.pack_into(">i", buf, 57, draw(st.integers(-1, len(recs) + 2)))
    return reseal(buf)


@settings(max_examples=600, deadline=None)
@given(batches())
@example(encode_batch([SimpleRecord(b"x" * 100)] * 250, base_offset=0, partition_leader_epoch=-1, timestamp_ms=NOW))
def test_the_fast_walk_and_the_full_decode_agree(raw):
    batch = batch_of(raw)
    decoded = full_decode(batch)
    fast = simple_values(batch)
    if fast is not None:  # accepted: the full decode accepts it too, with the same records, all simple
        assert not isinstance(decoded, str), decoded
        assert [(o, bytes(v)) for o, v in fast] == [(o, v) for o, _, _, v, _ in decoded]
        assert all(t == batch.base_timestamp and k is None and h == () for _, t, k, _, h in decoded)
    assert new_plain_batches(raw) == old_plain_batches(raw)


@settings(max_examples=400, deadline=None)
@given(batches(), st.booleans(), st.one_of(st.none(), st.integers(0, 1100)), st.booleans())
def test_the_replay_sees_the_same_records_and_counts(raw, metadata, up_to, skip_odd):
    if metadata:  # turn the values that are long enough into metadata records
        record = encode_metadata_record(FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21)))
        batch = batch_of(raw)
        if not isinstance(full_decode(batch), str) and batch.record_count > 0:
            values = [record if i % 2 else b"x" for i in range(batch.record_count)]
            raw = encode_batch([SimpleRecord(v) for v in values], base_offset=batch.base_offset,
                               partition_leader_epoch=3, timestamp_ms=NOW)
    old_count, new_count = [0], [0]

    def old_replay() -> list | str:
        try:
            out = []
            for batch in iter_batches(raw, verify_crc=False):
                if up_to is not None and batch.base_offset > up_to:
                    return out
                for r in [] if batch.is_control else batch.records():
                    if up_to is not None and r.offset > up_to:
                        return out
                    if skip_odd and r.offset % 2:
                        continue
                    if decode_value(r.value) is None:
                        old_count[0] += 1
                    else:
                        out.append((r.offset, decode_value(r.value)))
            return out
        except RecordsError as exc:
            return f"{type(exc).__name__}: {exc}"

    def new_replay() -> list | str:
        try:
            return list(metadata_records(raw, on_undecodable=lambda n: new_count.__setitem__(0, new_count[0] + n),
                                         up_to=up_to, skip=(lambda offset: offset % 2 == 1) if skip_odd else None))
        except RecordsError as exc:
            return f"{type(exc).__name__}: {exc}"

    assert new_replay() == old_replay()
    assert new_count == old_count


def test_what_the_writer_sends_takes_the_fast_walk_past_one_and_two_byte_offsets():
    values = [b"v" * (i % 300) for i in range(9000)]
    batch = batch_of(encode_batch([SimpleRecord(v) for v in values], base_offset=7, partition_leader_epoch=1,
                                  timestamp_ms=NOW))
    assert simple_values(batch) is None  # offset deltas past 8191 take three bytes: the full decode's job
    batch = batch_of(encode_batch([SimpleRecord(v) for v in values[:8192]], base_offset=7,
                                  partition_leader_epoch=1, timestamp_ms=NOW))
    fast = simple_values(batch)
    assert fast is not None and [(o, bytes(v)) for o, v in fast] == [(7 + i, v) for i, v in enumerate(values[:8192])]


def test_anything_else_is_left_to_the_full_decode():
    def shape(**fields) -> list | None:
        return simple_values(batch_of(encode_batch([SimpleRecord(b"a", **fields), SimpleRecord(b"b")],
                                                   base_offset=0, partition_leader_epoch=1, timestamp_ms=NOW)))

    assert shape() is not None
    assert shape(key=b"k") is None
    assert shape(headers=(("h", None),)) is None
    assert shape(timestamp_ms=NOW + 1) is None  # the second record's timestamp delta is -1... not 0
    assert simple_values(batch_of(encode_batch([SimpleRecord(None)], base_offset=0, partition_leader_epoch=1,
                                               timestamp_ms=NOW))) is None  # a null value


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=70), st.binary(min_size=1000, max_size=1100), st.just(b"y" * 9000)),
                min_size=1, max_size=40),
       st.integers(0, 1200), st.integers(-1, 2**31 - 1), st.integers(0, 2**41), st.integers(-(2**40), 2**40))
def test_encode_values_writes_what_encode_batch_writes(values, repeat_to, epoch, timestamp, base_offset):
    values = values * max(1, repeat_to // len(values))  # past 1024 records too: deltas beyond the table
    assert encode_values(values, base_offset=base_offset, partition_leader_epoch=epoch, timestamp_ms=timestamp) == \
        encode_batch([SimpleRecord(value=v) for v in values], base_offset=base_offset,
                     partition_leader_epoch=epoch, timestamp_ms=timestamp)


def test_encode_values_past_the_two_byte_offset_deltas_and_of_no_value():
    values = [b"z" * (i % 5) for i in range(17_000)]  # offset deltas of three bytes after 8191
    encoded = encode_values(values, base_offset=0, partition_leader_epoch=1, timestamp_ms=NOW)
    assert encoded == encode_batch([SimpleRecord(v) for v in values], base_offset=0, partition_leader_epoch=1,
                                   timestamp_ms=NOW)
    with pytest.raises(ValueError):
        encode_values([], base_offset=0, partition_leader_epoch=1, timestamp_ms=NOW)


@st.composite
def uniform_batches(draw) -> bytes:
    """A batch of one value length, past the one-byte offset deltas and the length prefixes' sizes, then sometimes
    one framing byte of one record changed, the count changed or the end cut, and re-sealed."""
    length = draw(st.sampled_from([0, 1, 7, 52, 53, 56, 57, 58, 63, 64, 100, 1000, 8176, 8177, 8191, 8192]))
    count = draw(st.sampled_from([9, 10, 63, 64, 65, 66, 130, 1000, 8192, 8193]) if length < 200
                 else st.integers(9, 70))
    first = draw(st.binary(min_size=min(length, 1), max_size=min(length, 1)))
    recs = [SimpleRecord(first + bytes([i % 251]) * (length - len(first))) for i in range(count)]
    buf = bytearray(encode_batch(recs, base_offset=draw(st.integers(0, 1000)), partition_leader_epoch=3,
                                 timestamp_ms=NOW))
    starts, ends = record_bounds(buf)
    how = draw(st.sampled_from(["none", "none", "framing", "framing", "count", "cut"]))
    if how == "framing":
        i = draw(st.integers(0, len(starts) - 1))
        at = draw(st.one_of(st.integers(starts[i], min(starts[i] + 8, len(buf) - 1)), st.just(ends[i] - 1)))
        buf[at] = draw(st.one_of(st.integers(0, 255), st.just(buf[at] ^ 1), st.just(buf[at] ^ 0x80)))
    elif how == "count":
        struct.pack_into(">i", buf, 57, draw(st.integers(0, count + 2)))
    elif how == "cut":
        del buf[len(buf) - draw(st.integers(1, 3)):]
    return reseal(buf)


@settings(max_examples=500, deadline=None)
@given(uniform_batches(), st.sampled_from(["every", "none", "some"]))
def test_the_uniform_fast_path_answers_as_the_walk(raw, keep_name):
    from pykraft.records.simple_scan import EVERY_VALUE, NO_VALUE, _uniform_values, _walk_values

    keep = {"every": EVERY_VALUE, "none": NO_VALUE, "some": bytes(i % 3 == 0 for i in range(256))}[keep_name]
    batch = batch_of(raw)
    view = batch.buffer[BATCH_HEADER_SIZE:]
    walked = _walk_values(bytes(view), view, batch.record_count, batch.base_offset, keep)
    fast = _uniform_values(bytes(view), view, batch.record_count, batch.base_offset, keep)
    if fast is not None:
        assert walked is not None
        assert [(o, bytes(v)) for o, v in fast] == [(o, bytes(v)) for o, v in walked]
    simple = simple_values(batch, keep)
    assert (None if simple is None else [(o, bytes(v)) for o, v in simple]) == (
        None if walked is None else [(o, bytes(v)) for o, v in walked])


@pytest.mark.parametrize("kept", [0, 1, 7, 8])
def test_a_batch_cut_to_a_few_bytes_of_records_is_left_to_the_walk(kept):
    buf = bytearray(encode_batch([SimpleRecord(b"v" * 10)] * 20, base_offset=0, partition_leader_epoch=1,
                                 timestamp_ms=NOW))
    raw = reseal(buf[:BATCH_HEADER_SIZE + kept])  # the header still counts 20 records
    batch = batch_of(raw)
    assert simple_values(batch) is None
    assert isinstance(full_decode(batch), str)


def test_a_batch_of_one_value_length_is_framed_without_the_walk():
    from pykraft.records.simple_scan import EVERY_VALUE, _uniform_values

    for count, length in ((9, 0), (64, 100), (1000, 100), (8192, 3), (20, 8176)):
        batch = batch_of(encode_batch([SimpleRecord(bytes([i % 256]) * length) for i in range(count)],
                                      base_offset=5, partition_leader_epoch=1, timestamp_ms=NOW))
        view = batch.buffer[BATCH_HEADER_SIZE:]
        fast = _uniform_values(bytes(view), view, count, 5, EVERY_VALUE)
        assert fast is not None, (count, length)
        assert [(o, bytes(v)) for o, v in fast] == [(5 + i, bytes([i % 256]) * length) for i in range(count)]


@pytest.mark.parametrize("size", [0, 1, 53, 56, 57, 63, 64, 100, 8176, 8177, 9000])
@pytest.mark.parametrize("count", [1, 63, 64, 65, 1000, 8192, 8193])
def test_encode_values_of_one_length_writes_what_encode_batch_writes(size, count):
    if size * count > 20_000_000:
        count = 70  # the large values only across the one- and two-byte offset deltas
    values = [bytes([i % 256]) * size for i in range(count)]
    values[count // 2] = memoryview(bytearray(values[count // 2]))  # any bytes-like value
    assert encode_values(values, base_offset=9, partition_leader_epoch=2, timestamp_ms=NOW) == \
        encode_batch([SimpleRecord(value=bytes(v)) for v in values], base_offset=9, partition_leader_epoch=2,
                     timestamp_ms=NOW)
