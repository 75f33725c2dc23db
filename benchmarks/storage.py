"""Storage benchmark: FileLog appends with a flush after each, against the disk's raw write+fsync loop.

Run: .venv/bin/python benchmarks/storage.py [--dir DIR] [--seconds S] [--read-mib N]

For batches of 1, 10 and 100 records of 100 bytes it measures, in the same directory and the same run:
- raw:     os.write(batch bytes) + os.fsync, in a loop (the physical limit of the disk);
- raw-fdatasync: the same with os.fdatasync (what FileLog.flush uses for segment data);
- FileLog: append_as_leader + flush().
It prints batches/s, records/s and the ratio to the raw fsync loop, then the sequential read throughput of a
100 MiB log (read(offset, 1 MiB) from start to end), and how long recovery on open takes for that log.
No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import LogConfig, open_file_log

RECORD = b"r" * 100


def make_batch(base: int, count: int) -> bytes:
    return encode_batch([SimpleRecord(value=RECORD)] * count, base_offset=base, partition_leader_epoch=1,
                        timestamp_ms=0)


def raw_loop(path: str, data: bytes, seconds: float, sync) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    count = 0
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            os.write(fd, data)
            sync(fd)
            count += 1
    finally:
        os.close(fd)
        os.unlink(path)
    return count


def file_log_loop(directory: str, records: int, seconds: float) -> int:
    log, _ = open_file_log(directory, LogConfig())
    # Pre-encode batches outside the timed loop, as the accumulator would hand them over.
    template = bytearray(make_batch(0, records))
    count = 0
    deadline = time.perf_counter() + seconds
    try:
        while time.perf_counter() < deadline:
            template[0:8] = log.end_offset().to_bytes(8, "big")  # base offset is not covered by the CRC
            log.append_as_leader(template, 1)
            log.flush()
            count += 1
    finally:
        log.close()
        shutil.rmtree(directory)
    return count


def bench_appends(root: str, seconds: float) -> None:
    print(f"appends with a flush after each ({seconds:.1f} s per cell), directory {root}")
    print(f"{'records/batch':>13} {'raw fsync b/s':>14} {'raw fdatasync b/s':>18} {'FileLog b/s':>12} "
          f"{'FileLog rec/s':>14} {'vs raw fsync':>13} {'vs fdatasync':>13}")
    one_record_rate = None
    for records in (1, 10, 100):
        data = make_batch(0, records)
        raw = raw_loop(os.path.join(root, "raw.bin"), data, seconds, os.fsync) / seconds
        raw_d = raw_loop(os.path.join(root, "raw.bin"), data, seconds, getattr(os, "fdatasync", os.fsync)) / seconds
        ours = file_log_loop(os.path.join(root, f"log{records}"), records, seconds) / seconds
        print(f"{records:>13} {raw:>14.0f} {raw_d:>18.0f} {ours:>12.0f} {ours * records:>14.0f} "
              f"{ours / raw:>12.0%} {ours / raw_d:>12.0%}")
        if records == 1:
            one_record_rate = ours
        elif records == 100 and one_record_rate:
            print(f"100-record batches give {ours * 100 / one_record_rate:.1f}x the records/s of 1-record batches")


def bench_read(root: str, mib: int) -> None:
    directory = os.path.join(root, "read")
    log, _ = open_file_log(directory, LogConfig())
    batch = bytearray(make_batch(0, 100))
    while log.size_in_bytes() < mib << 20:
        batch[0:8] = log.end_offset().to_bytes(8, "big")
        log.append_as_leader(batch, 1)
    log.flush()
    size = log.size_in_bytes()
    start = time.perf_counter()
    offset, total = 0, 0
    while offset < log.end_offset():
        info = log.read(offset, 1 << 20)
        total += len(info.records)
        view = memoryview(info.records)
        # The next offset: last batch's base offset + last offset delta + 1 (headers only).
        pos = 0
        last = 0
        while pos < len(view):
            base = int.from_bytes(view[pos : pos + 8], "big")
            length = int.from_bytes(view[pos + 8 : pos + 12], "big")
            last = base + int.from_bytes(view[pos + 23 : pos + 27], "big")
            pos += 12 + length
        offset = last + 1
    elapsed = time.perf_counter() - start
    log.close()
    print(f"sequential read of {size / (1 << 20):.0f} MiB in 1 MiB reads: {total / elapsed / (1 << 20):.0f} MiB/s "
          f"(page cache warm)")
    start = time.perf_counter()
    log, report = open_file_log(directory, LogConfig())
    elapsed = time.perf_counter() - start
    print(f"open with full recovery scan of {report.bytes_validated / (1 << 20):.0f} MiB "
          f"({report.segments} segment): {elapsed:.2f} s")
    log.close()
    shutil.rmtree(directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="directory on the disk to measure (default: a temp dir)")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--read-mib", type=int, default=100)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="pykraft-bench-", dir=args.dir)
    try:
        bench_appends(root, args.seconds)
        bench_read(root, args.read_mib)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
