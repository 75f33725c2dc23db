"""Log cleaner benchmark: a pass's throughput against a plain copy of the same segments, its memory against the
dedupe buffer, and the produce figures of a compacted topic being cleaned against the same topic not compacted.

Run: .venv/bin/python benchmarks/compaction.py [--dir DIR] [--mib N] [--keys K] [--value-bytes B] [--dedupe-mib M]
     [--memory-dedupe-mib M] [--produce-seconds S] [--skip-produce]

In one run and one directory:
1. A partition log of `--mib` MiB of keyed records (batches of 100 records, keys drawn at random from `--keys`,
   values of each of `--value-bytes`: one log per size, 200 B and 1 KiB by default), in segments of 8 MiB, all
   sealed and below the high watermark: all of it dirty. The cleaner's cost is per record, the copy's per byte.
2. The yardstick: a plain read + write copy of the same segment files in the same directory, in chunks of the
   cleaner's I/O buffer (256 KiB, Kafka's default per thread), each copy fsynced like a cleaned segment.
3. The cleaner: one pass over a copy of that log (Kafka's default 128 MiB dedupe buffer), timed from the plan to
   the last swap: MB/s of dirty log processed (Kafka's "MB of log processed in T seconds") and MB/s written, and
   the ratio to the yardstick (issue 27's goal: >= 40%), per phase (offset map, rewrite) too. The yardstick and
   the pass alternate `--rounds` times (medians printed, and each round's ratio).
   The pass reads windows of up to 8 MiB where the dedupe buffer has room its map table leaves (the I/O buffer
   otherwise) and keeps the mapped records' rows for the rewrite in that room too (storage/cleaner.py): the
   yardstick keeps its 256 KiB chunks.
4. Memory: a pass under tracemalloc with a `--memory-dedupe-mib` buffer small enough to fill: the peak Python
   memory of the pass and of its offset map against that buffer (the map is sized so that it stays within it).
   And a pass with the `--dedupe-mib` buffer: its traced peak beyond the buffer's own allocation (the windows,
   their columns and the kept rows, which use the part of the buffer the pass's table leaves untouched).
5. Produce (unless --skip-produce): benchmarks/produce.py's setting (1 controller + 3 brokers, acks=all, RF 3,
   confluent-kafka, idempotent, 1 KiB records) with keyed records into one partition, twice on fresh clusters:
   cleanup.policy=delete, then cleanup.policy=compact with 8 MiB segments, so that each broker's cleaner cleans its
   replica while the producer runs, then the same with the cleaner throttled (log.cleaner.io.max.bytes.per.second,
   `--throttle-mb`); MB/s, p50/p99 latency, CPU ms/MB of all processes, and what the cleaners did meanwhile.
No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np

from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import open_file_log
from pykraft.storage.cleaner import Cleaner
from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings, clean_once
from pykraft.storage.file_log import LogConfig
from pykraft.storage.log_manager import read_topic_id
from pykraft.storage.offset_map import OffsetMap, Throttler

MIB = 1 << 20
SEGMENT_BYTES = 8 * MIB
IO_BUFFER = 256 * 1024  # log.cleaner.io.buffer.size 512 KiB / 1 thread / 2 (read and write buffers)
KEY = ("bench", 0)
RUN_KEYS = 4096  # keys put into the map at once by the memory probe: more than a 256 KiB chunk of 64-byte records


def value_sizes(spec: str) -> tuple[int, int]:
    """"200" -> every value 200 bytes; "100-300" -> sizes drawn uniformly between the two."""
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def build_log(root: str, mib: int, keys: int, spec: str) -> int:
    """A log of `mib` MiB of keyed records, sealed and committed. Returns how many records."""
    config = LogConfig(segment_bytes=SEGMENT_BYTES, allow_offset_gaps=True)
    log, _ = open_file_log(root, config, topic=KEY[0], partition=KEY[1], topic_id=uuid.uuid4())
    rng = random.Random(7)
    low, high = value_sizes(spec)
    values = [b"v" * size for size in range(low, high + 1)]
    count = 0
    while log.size_in_bytes() < mib * MIB:
        batch = [SimpleRecord(rng.choice(values), b"key-%08d" % rng.randrange(keys)) for _ in range(100)]
        log.append_as_follower(encode_batch(batch, base_offset=log.end_offset(), partition_leader_epoch=1,
                                            timestamp_ms=1_000 + count), 1)
        count += 100
    log.roll()
    log.update_high_watermark(log.end_offset())
    log.close()
    return count


def yardstick(directory: Path) -> tuple[float, int, float]:
    """Copy every sealed segment file (read + write in cleaner-sized chunks, fsync per file): (seconds, bytes,
    CPU seconds of this process)."""
    sources = sorted(p for p in directory.iterdir() if p.suffix == ".log" and p.stat().st_size)
    total = 0
    start, cpu = time.perf_counter(), time.process_time()
    for source in sources:
        fd_in = os.open(source, os.O_RDONLY)
        fd_out = os.open(str(source) + ".copy", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            position = 0
            while True:
                chunk = os.pread(fd_in, IO_BUFFER, position)
                if not chunk:
                    break
                os.write(fd_out, chunk)
                position += len(chunk)
            os.fsync(fd_out)
            total += position
        finally:
            os.close(fd_in)
            os.close(fd_out)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    for source in sources:
        os.unlink(str(source) + ".copy")
    return elapsed, total, cpu


def one_pass(root: str, omap: OffsetMap, traced: bool = False, fast: bool = True):
    """Open the log at `root` and clean it once with `omap` (a cleaner thread keeps its map from pass to pass):
    (seconds, CPU seconds of this process, the stats, the traced peak bytes of the pass when `traced`:
    tracemalloc runs from the plan to the last swap, not during the open's recovery)."""
    log, _ = open_file_log(root, LogConfig(segment_bytes=SEGMENT_BYTES, allow_offset_gaps=True), topic=KEY[0],
                           partition=KEY[1], topic_id=read_topic_id(os.path.join(root, f"{KEY[0]}-{KEY[1]}")))
    log.update_high_watermark(log.end_offset())  # committed: a broker reads it from replication-offset-checkpoint
    try:
        cleaner = Cleaner(omap, IO_BUFFER, Throttler(float("inf"), time.monotonic_ns()), fast=fast)
        offered = CleanableLog(KEY, root, log, CompactionSettings(segment_bytes=SEGMENT_BYTES))
        if traced:
            tracemalloc.start()
        start, cpu = time.perf_counter(), time.process_time()
        result = clean_once(CleanerManager([root]), cleaner, [offered], 10**13)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        if traced:
            tracemalloc.stop()
        assert result is not None, "the log was not due for cleaning"
        return elapsed, cpu, result[2], peak
    finally:
        log.close()


def throughput(base: str, dedupe_mib: int, spec: str) -> None:
    """`--rounds` alternations of the yardstick and a pass over a fresh copy of the log (the machine's load moves
    the two differently: the copy waits on the disk, the pass on a core): medians, and each round's ratio."""
    root = os.path.join(base, f"log-{spec}")
    records = build_log(root, ARGS.mib, ARGS.keys, spec)
    partition_dir = Path(root) / f"{KEY[0]}-{KEY[1]}"
    omap = OffsetMap(dedupe_mib * MIB)
    copies, passes, copy_cpus = [], [], []
    for round_ in range(ARGS.rounds):
        copy_s, copied, copy_cpu = yardstick(partition_dir)
        copies.append(copied / MIB / copy_s)
        copy_cpus.append(copy_cpu)
        work = f"{root}-pass-{round_}"
        shutil.copytree(root, work)
        passes.append(one_pass(work, omap, fast=not ARGS.record_by_record))
        shutil.rmtree(work)
    copy_rate = statistics.median(copies)
    elapsed, cpu, stats, _ = sorted(passes, key=lambda p: p[0])[len(passes) // 2]
    read_rate, write_rate = stats.bytes_read / MIB / elapsed, stats.bytes_written / MIB / elapsed
    ratios = ", ".join(f"{p[2].bytes_read / MIB / p[0] / c:.0%}" for p, c in zip(passes, copies))
    path = "record by record" if ARGS.record_by_record else "batches and columns"
    print(f"log: {copied / MIB:.1f} MiB, {records:,} records of {spec} B values over {ARGS.keys:,} keys")
    print(f"yardstick (plain read + write copy of the same segments, {IO_BUFFER // 1024} KiB chunks, fsync per "
          f"file), median of {ARGS.rounds}: {copy_rate:8.1f} MB/s read and written")
    print(f"cleaner pass ({path}, {dedupe_mib} MiB dedupe buffer, {omap.size:,} keys mapped, utilization "
          f"{stats.buffer_utilization:.1%}), median: {elapsed:.2f} s ({cpu:.2f} s of CPU), {read_rate:8.1f} MB/s of "
          f"dirty log processed, {write_rate:8.1f} MB/s written ({stats.bytes_written / MIB:.1f} MiB, "
          f"{stats.messages_written:,} records kept); {read_rate / copy_rate:6.1%} of the yardstick (goal 40%; per "
          f"round: {ratios})")
    copy_cpu, pass_cpu = statistics.median(copy_cpus), statistics.median(p[1] for p in passes)
    print(f"    CPU (load-proof, the waits for the disk left out): the copy {copy_cpu:.2f} s, the pass {pass_cpu:.2f} "
          f"s (medians): MB per CPU second {copied / MIB / max(pass_cpu, 1e-9):.0f} against the copy's "
          f"{copied / MIB / max(copy_cpu, 1e-9):.0f}, {copy_cpu / max(pass_cpu, 1e-9):.1%}")
    map_s, clean_s = stats.map_elapsed_s, elapsed - stats.map_elapsed_s
    print(f"    offset map: {stats.map_bytes_read / MIB:.1f} MiB in {map_s:.2f} s "
          f"({stats.map_bytes_read / MIB / max(map_s, 1e-9):.1f} MB/s); rewrite and swaps: "
          f"{stats.bytes_read / MIB:.1f} MiB in {clean_s:.2f} s ({stats.bytes_read / MIB / max(clean_s, 1e-9):.1f} "
          f"MB/s)")
    memory(root, ARGS.memory_dedupe_mib)
    room_memory(root, dedupe_mib)
    shutil.rmtree(root)


def room_memory(root: str, dedupe_mib: int) -> None:
    work = root + "-room"
    shutil.copytree(root, work)
    omap = OffsetMap(dedupe_mib * MIB)
    _, _, stats, peak = one_pass(work, omap, traced=True)
    extra = peak - dedupe_mib * MIB
    table = omap.table_bytes
    room = dedupe_mib * MIB - table
    print(f"memory ({dedupe_mib} MiB dedupe buffer, allocated whole, touched where used): pass peak {peak / MIB:.1f} "
          f"MiB, {extra / MIB:.1f} MiB beyond the buffer (windows, columns, kept rows) against the "
          f"{room / MIB:.1f} MiB its table (up to {table / MIB:.1f} MiB) leaves")
    shutil.rmtree(work)


def memory(root: str, dedupe_mib: int) -> None:
    work = root + "-memory"
    shutil.copytree(root, work)
    omap = OffsetMap(dedupe_mib * MIB)
    _, _, stats, peak = one_pass(work, omap, traced=True)
    probe = OffsetMap(dedupe_mib * MIB)
    keys = np.arange(probe.max_entries, dtype=np.uint64)  # the map filled to its limit, alone, a run of keys at
    hashes = keys * np.uint64(0x9E3779B97F4A7C15)  # a time as a pass puts them (a chunk's records); the keys are
    offsets = keys.astype(np.int64) + (1 << 40)  # the probe's input, made before the tracing starts
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    probe.clear()
    for at in range(0, len(keys), RUN_KEYS):
        run = slice(at, at + RUN_KEYS)
        probe.put_run(hashes[run], keys[run], offsets[run])
    map_peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    print(f"memory ({dedupe_mib} MiB dedupe buffer: {omap.max_entries:,} keys at most, this pass mapped "
          f"{omap.size:,}{' and filled it' if omap.full else ''}): pass peak {peak / MIB:.1f} MiB (map + "
          f"{IO_BUFFER // 1024} KiB I/O buffers + one window's columns: no room left for more), a full map alone (filled {RUN_KEYS:,} keys "
          f"at a time, its temporaries included) {map_peak / MIB:.1f} MiB = "
          f"{map_peak / (dedupe_mib * MIB):.0%} of the buffer")
    shutil.rmtree(work)


# ---- produce while the cleaner runs ------------------------------------------------------------------------


def produce_with(base: str, policy: str, seconds: float, throttle_mb: float = 0) -> tuple[float, float, float, float,
                                                                                          str]:
    import confluent_kafka
    from e2e.data_plane_checks import start_cluster
    from produce import CLIENT, MODES, _minus, usage

    root = Path(base) / f"cluster-{policy.replace(',', '-')}-{throttle_mb}"
    settings = {"log.cleaner.backoff.ms": "200"}
    if throttle_mb:
        settings["log.cleaner.io.max.bytes.per.second"] = str(throttle_mb * MIB)
    cluster = start_cluster(root, "warmup", settings)
    try:
        cluster.cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[cluster.broker_ids[0]].port}",
                    "--topic", "bench", "--partitions", "1", "--replication-factor", "3", "--config",
                    f"cleanup.policy={policy}", "--config", f"segment.bytes={SEGMENT_BYTES}")
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        producer = confluent_kafka.Producer({"bootstrap.servers": servers, **CLIENT, **MODES["idempotent"]})
        latencies: list[float] = []
        acked = [0]

        def on_delivery(error, message) -> None:
            if error is None:
                acked[0] += 1
                if message.latency() is not None:
                    latencies.append(message.latency())

        producer.list_topics("bench", timeout=30)
        pids = [cluster.nodes[n].process.pid for n in cluster.nodes] + [os.getpid()]
        before = [usage(pid) for pid in pids]
        value = b"r" * (1024 - 12)
        rng = random.Random(3)
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(100):
                try:
                    producer.produce("bench", value, key=b"key-%08d" % rng.randrange(ARGS.keys),
                                     on_delivery=on_delivery)
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        producer.flush(120)
        elapsed = time.perf_counter() - start
        cpu = sum(sum(_minus(usage(pid), b)[:2]) for pid, b in zip(pids, before))
        cleaners = [child for pid in pids[:-1] for child in _children(pid)]  # started during the run
        cpu += sum(sum(usage(pid)[:2]) for pid in cleaners)
        producer.close()
        time.sleep(1)
        cleaned = _cleaner_work(cluster)
    finally:
        cluster.stop_all(timeout=20)
        shutil.rmtree(root, ignore_errors=True)
    mb = acked[0] * 1024 / MIB
    latencies.sort()
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else float("nan")
    return mb / elapsed, p50, p99, 1000 * cpu / mb, cleaned


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def _cleaner_work(cluster) -> str:
    passes, read, written = 0, 0, 0
    for broker in cluster.broker_ids:
        for line in cluster.server_log(broker).splitlines():
            found = re.search(r"cleaned log bench-0 .*read (\d+) bytes, wrote (\d+) bytes", line)
            if found:
                passes += 1
                read += int(found.group(1))
                written += int(found.group(2))
    return f"{passes} passes on the 3 replicas, {read / MIB:.1f} MiB read, {written / MIB:.1f} MiB written"


def produce(base: str) -> None:
    for policy, throttle in (("delete", 0), ("compact", 0), ("compact", ARGS.throttle_mb)):
        rate, p50, p99, cpu, cleaned = produce_with(base, policy, ARGS.produce_seconds, throttle)
        label = f"cleanup.policy={policy}" + (f", cleaner throttled to {throttle:g} MB/s" if throttle else "")
        extra = f"; cleaners: {cleaned}" if policy == "compact" else ""
        print(f"produce, {label} (keyed 1 KiB records, idempotent, acks=all, RF 3): {rate:8.1f} MB/s  p50 {p50:.1f} "
              f"ms  p99 {p99:.1f} ms  CPU (all processes, cleaner processes too) {cpu:.2f} ms/MB{extra}")


def main() -> None:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--value-bytes", default="200,1000,100-300",
                        help="value sizes, one log each (comma-separated; 100-300: sizes drawn between the two)")
    parser.add_argument("--dedupe-mib", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the yardstick and a pass")
    parser.add_argument("--memory-dedupe-mib", type=int, default=2)
    parser.add_argument("--produce-seconds", type=float, default=15.0)
    parser.add_argument("--throttle-mb", type=float, default=4.0,
                        help="log.cleaner.io.max.bytes.per.second (MB/s) of the third produce run")
    parser.add_argument("--skip-produce", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--record-by-record", action="store_true",
                        help="passes take the record-by-record path (Cleaner(fast=False)), for comparison")
    ARGS = parser.parse_args()
    base = tempfile.mkdtemp(prefix="pykraft-compaction-", dir=ARGS.dir)
    try:
        for spec in ARGS.value_bytes.split(",") if not ARGS.skip_throughput else ():
            throughput(base, ARGS.dedupe_mib, spec)
        if not ARGS.skip_produce:
            produce(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


ARGS: argparse.Namespace
if __name__ == "__main__":
    main()
