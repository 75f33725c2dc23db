"""The vectorised decoding (columnar.py) gives exactly the table of the record-by-record decoding, on clean logs,
on keys, null values, headers, compressed and control batches, and on every kind of damage. No Spark here."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pykraft.pipeline.columnar import binary_column, decode_run
from pykraft.pipeline.decode import decode_bytes
from pykraft.pipeline.layout import LogFile, NodeIdentity
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.compression import Compression, compress
from pykraft.records.crc import crc32c

from .cluster_files import make_cluster, segment

FILE = LogFile("/x/00000000000000000000.log", NodeIdentity("C", 1, None), "t", 0, 0)
METADATA_FILE = LogFile("/x/00000000000000000000.log", NodeIdentity("C", 1, None), "__cluster_metadata", 0, 0)
GROUP_FILE = LogFile("/x/00000000000000000000.log", NodeIdentity("C", 1, None), "__consumer_offsets", 3, 0)


def _table(data: bytes, *, metadata: bool, vectorised: bool, rows: int = 65536, file: LogFile = FILE) -> pa.Table:
    batches = list(decode_bytes(data, file, metadata=metadata, vectorised=vectorised, rows_per_batch=rows))
    return pa.Table.from_batches(batches, schema=batches[0].schema if batches else None)


def _assert_same(data: bytes, *, metadata: bool = False, rows: int = 65536, file: LogFile = FILE) -> pa.Table:
    fast = _table(data, metadata=metadata, vectorised=True, rows=rows, file=file)
    slow = _table(data, metadata=metadata, vectorised=False, rows=rows, file=file)
    assert fast.to_pylist() == slow.to_pylist()
    return fast


def _batches(rng: random.Random, count: int, **options) -> bytes:
    out = bytearray()
    offset = 0
    for i in range(count):
        values = []
        for _ in range(rng.randint(1, 40)):
            key = None if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 300))
            value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 1, 63, 64, 200, 9000]))
            values.append(SimpleRecord(value, key=key, timestamp_ms=1_700_000_000_000 + rng.randint(-5, 10**9)))
        out += encode_batch(values, base_offset=offset, partition_leader_epoch=i, timestamp_ms=1_700_000_000_000,
                            **options)
        offset += len(values)
    return bytes(out)


def _gzip(batch: bytes) -> bytes:
    """The same batch with its records gzip-compressed (length, attributes and CRC fixed)."""
    body = compress(Compression.GZIP, batch[61:])
    out = bytearray(batch[:61]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | Compression.GZIP)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_random_plain_batches_decode_identically():
    data = _batches(random.Random(1), 60)
    table = _assert_same(data)
    assert table.num_rows > 60
    assert table.column("key").null_count > 0 and table.column("value").null_count > 0
    buf = np.frombuffer(data, dtype=np.uint8)
    positions, position = [], 0
    for batch in iter_batches(data, verify_crc=False):
        positions.append((position, batch))
        position += batch.size_in_bytes
    run = decode_run(buf, data, positions)  # the clean log takes the vectorised path, not the fallback
    assert run is not None and run.offset.tolist() == table.column("offset").to_pylist()


def test_small_output_batches_and_headers_and_compression():
    rng = random.Random(2)
    with_headers = encode_batch([SimpleRecord(b"v", headers=(("h", b"x"),))], base_offset=10_000,
                                partition_leader_epoch=1, timestamp_ms=5)
    compressed = _gzip(encode_batch([SimpleRecord(b"abc" * 50)] * 3, base_offset=10_001, partition_leader_epoch=1,
                                    timestamp_ms=5))
    data = _batches(rng, 10) + with_headers + compressed + _batches(rng, 10)
    table = _assert_same(data, rows=7)
    assert (b"abc" * 50) in table.column("value").to_pylist()


def test_metadata_log_with_control_records_decodes_identically(tmp_path: Path):
    data_dir = make_cluster(tmp_path, "ColumnarClusterAAAAAAAA", nodes=(1,))[0]
    raw = segment(data_dir).read_bytes()
    table = _assert_same(raw, metadata=True, file=METADATA_FILE)
    assert set(table.column("record_type").to_pylist()) >= {"REGISTER_BROKER_RECORD", "LEADER_CHANGE"}
    _assert_same(raw, metadata=True, rows=3, file=METADATA_FILE)
    # The same bytes in a user partition are the user's: only the control records get payload columns.
    user = _assert_same(raw, metadata=True)
    assert set(user.column("record_type").to_pylist()) == {None, "LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"}


def test_consumer_offsets_records_decode_to_commits_and_generations():
    from pykraft.records.group_records import (GroupKey, GroupValue, OffsetKey, OffsetValue, encode_group_value,
                                               encode_key, encode_offset_value)

    records = [SimpleRecord(encode_offset_value(OffsetValue(42, 3, "", 1000)), key=encode_key(OffsetKey("g", "t", 1))),
               SimpleRecord(encode_group_value(GroupValue("consumer", 7, "range", "m1", 999, ())),
                            key=encode_key(GroupKey("g"))),
               SimpleRecord(None, key=encode_key(OffsetKey("g", "t", 1)))]
    table = _assert_same(encode_batch(records, base_offset=5, partition_leader_epoch=2, timestamp_ms=9),
                         metadata=True, file=GROUP_FILE)
    rows = table.to_pylist()
    assert [r["record_type"] for r in rows] == ["OFFSET_COMMIT", "GROUP_METADATA", "OFFSET_COMMIT"]
    import json
    payloads = [json.loads(r["payload"]) for r in rows]
    assert payloads[0] == {"group": "g", "topic": "t", "partition": 1, "offset": 42, "leaderEpoch": 3, "metadata": "",
                           "commitTimestamp": 1000}
    assert payloads[1]["generation"] == 7 and payloads[1]["protocol"] == "range"
    assert payloads[2] == {"group": "g", "topic": "t", "partition": 1, "tombstone": True}
    assert [r["producer_id"] for r in rows] == [-1] * 3 and rows[0]["base_sequence"] == -1


@pytest.mark.parametrize("seed", range(40))
def test_every_damage_decodes_identically(seed: int):
    rng = random.Random(seed)
    data = bytearray(_batches(rng, 6))
    positions = [0]
    for batch in iter_batches(bytes(data), verify_crc=False):
        positions.append(positions[-1] + batch.size_in_bytes)
    victim = rng.randrange(len(positions) - 1)
    where = rng.randrange(positions[victim] + 61, positions[victim + 1])  # inside the records of one batch
    data[where] = rng.randrange(256)
    if seed % 5 == 0:
        data = data[: rng.randrange(len(data))]  # a torn tail as well
    _assert_same(bytes(data), metadata=bool(seed % 2))


def test_binary_column_of_empty_null_and_adjacent_ranges():
    buf = np.frombuffer(b"abcdefghij", dtype=np.uint8)
    column = binary_column(buf, np.array([0, 2, 2, 5, 9]), np.array([2, 0, -1, 3, 1]))
    assert column.to_pylist() == [b"ab", b"", None, b"fgh", b"j"]



def test_long_batches_of_one_size_and_of_varied_sizes_are_framed_without_the_fallback():
    """Batches of hundreds of records (offset deltas of two bytes from 64 on), of one size (framed at once by the
    record scan) and of varied sizes, with one- and two-byte record lengths and a three-byte one (walked): the
    vectorised path takes them all and gives the record-by-record table."""
    rng = random.Random(7)
    out, offset = bytearray(), 0
    shapes = [[SimpleRecord(b"v" * 40)] * 300,  # one size
              [SimpleRecord(b"w" * 100, key=b"k" * 8)] * 200,  # one size, two-byte lengths
              [SimpleRecord(rng.randbytes(rng.randint(0, 150))) for _ in range(250)],  # varied sizes
              [SimpleRecord(b"x" * 20), SimpleRecord(b"y" * 9000), SimpleRecord(None)]]  # a three-byte length
    for values in shapes:
        out += encode_batch(values, base_offset=offset, partition_leader_epoch=3, timestamp_ms=1_700_000_000_000)
        offset += len(values)
    data = bytes(out)
    table = _assert_same(data, rows=128)
    assert table.column("offset").to_pylist() == list(range(offset))
    positions, position = [], 0
    for batch in iter_batches(data, verify_crc=False):
        positions.append((position, batch))
        position += batch.size_in_bytes
    run = decode_run(np.frombuffer(data, dtype=np.uint8), data, positions)
    assert run is not None and run.value.to_pylist() == table.column("value").to_pylist()
