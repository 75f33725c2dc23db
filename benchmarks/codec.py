"""Record batch v2 codec throughput: pykraft against aiokafka's compiled (Cython) codec and kafka-python's
pure-Python codec, measured in the same run.

Run: `.venv/bin/python benchmarks/codec.py` (or `make bench`; `.venv-compiled/bin/python` for the compiled build).
Prints records/s and MB/s per codec, a JSON line (microseconds per call, the build in use) and the ratios the
foundation issue asks for (goal: pykraft >= 3x kafka-python on decode, within 5x of aiokafka).

Decode means what a consumer of the log does: walk the batches, verify each CRC, and read every record's
offset, timestamp, key and value.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

from pykraft.cli.build_info import build_fields
from pykraft.records import SimpleRecord, encode_batch, iter_batches

RECORDS_PER_BATCH = 100
VALUE = bytes(range(100))  # 100-byte values
TIMESTAMP = 1_700_000_000_000
SEGMENT_BYTES = 1 << 20


def best_of(fn: Callable[[], int], repeat: int, min_time: float = 0.2) -> tuple[float, int]:
    """(best seconds per call, records per call): loop each trial until `min_time` to smooth timer noise."""
    best = float("inf")
    records = 0
    for _ in range(repeat):
        calls = 0
        start = time.perf_counter()
        while True:
            records = fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best, records


# ---- encoders: one batch of 100 records ------------------------------------------------------------------


def encode_pykraft() -> bytes:
    return encode_batch(
        [SimpleRecord(VALUE)] * RECORDS_PER_BATCH, base_offset=0, partition_leader_epoch=1, timestamp_ms=TIMESTAMP
    )


def _encode_with(builder_cls) -> bytes:
    builder = builder_cls(2, 0, 0, -1, -1, -1, 1 << 20)
    for i in range(RECORDS_PER_BATCH):
        builder.append(i, TIMESTAMP, None, VALUE, [])
    return bytes(builder.build())


def encode_aiokafka() -> bytes:
    return _encode_with(AioBuilder)


def encode_kafka_python() -> bytes:
    return _encode_with(KpBuilder)


# ---- decoders: walk every batch and record of a buffer -----------------------------------------------------


def decode_pykraft(data: bytes) -> int:
    count = 0
    for batch in iter_batches(data):
        for record in batch.records():
            record.offset, record.timestamp, record.key, record.value  # noqa: B018 - read every field
            count += 1
    return count


def _decode_with(memory_records_cls, data: bytes) -> int:
    count = 0
    walker = memory_records_cls(data)
    while walker.has_next():
        batch = walker.next_batch()
        if not batch.validate_crc():
            raise AssertionError("CRC mismatch in benchmark data")
        for record in batch:
            record.offset, record.timestamp, record.key, record.value  # noqa: B018 - read every field
            count += 1
    return count


def decode_aiokafka(data: bytes) -> int:
    return _decode_with(AioMemoryRecords, data)


def decode_kafka_python(data: bytes) -> int:
    return _decode_with(KpMemoryRecords, data)


def make_segment(batch: bytes) -> bytes:
    copies = max(1, SEGMENT_BYTES // len(batch))
    return batch * copies  # base offsets repeat; none of the decoders checks continuity


def row(name: str, seconds: float, records: int, nbytes: int) -> dict:
    return {
        "name": name,
        "us": seconds * 1e6,
        "records_per_s": records / seconds,
        "mb_per_s": nbytes / seconds / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="trials per measurement; the best is kept")
    args = parser.parse_args()

    batch = encode_pykraft()
    for other in (encode_aiokafka(), encode_kafka_python()):
        assert decode_pykraft(other) == RECORDS_PER_BATCH  # the three codecs agree on the format
    segment = make_segment(batch)
    segment_records = decode_pykraft(segment)

    results: dict[str, list[dict]] = {}
    encoders = {"pykraft": encode_pykraft, "aiokafka": encode_aiokafka, "kafka-python": encode_kafka_python}
    decoders = {"pykraft": decode_pykraft, "aiokafka": decode_aiokafka, "kafka-python": decode_kafka_python}

    results["encode 100x100B batch"] = [
        row(name, *best_of(lambda f=fn: (f(), RECORDS_PER_BATCH)[1], args.repeat), len(batch)) for name, fn in encoders.items()
    ]
    results["decode 100x100B batch"] = [
        row(name, *best_of(lambda f=fn: f(batch), args.repeat), len(batch)) for name, fn in decoders.items()
    ]
    results[f"decode 1 MiB segment ({segment_records} records)"] = [
        row(name, *best_of(lambda f=fn: f(segment), args.repeat), len(segment)) for name, fn in decoders.items()
    ]

    for title, rows in results.items():
        print(f"\n{title}")
        print(f"  {'codec':<14}{'us/call':>12}{'records/s':>14}{'MB/s':>10}")
        for r in rows:
            print(f"  {r['name']:<14}{r['us']:>12.1f}{r['records_per_s']:>14,.0f}{r['mb_per_s']:>10.1f}")
        by_name = {r["name"]: r["us"] for r in rows}
        print(
            f"  pykraft is {by_name['kafka-python'] / by_name['pykraft']:.2f}x kafka-python; "
            f"aiokafka is {by_name['pykraft'] / by_name['aiokafka']:.2f}x pykraft"
        )
    print(json.dumps({"bench": "codec", **build_fields(),
                      **{title: {r["name"]: round(r["us"], 2) for r in rows} for title, rows in results.items()}}))


if __name__ == "__main__":
    main()
