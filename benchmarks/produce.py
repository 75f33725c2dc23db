"""Produce benchmark: acks=all, replication factor 3, 1 KiB records through confluent-kafka, against the disk.

Run: .venv/bin/python benchmarks/produce.py [--dir DIR] [--seconds S] [--raw-mib N]

In one run and one directory it measures:
- raw: sequential os.write of 1 MiB blocks + os.fdatasync, the disk's physical bandwidth for this workload;
- pykraft: a 1-controller, 3-broker cluster of real processes on 127.0.0.1, one 1-partition topic with
  replication factor 3 and min.insync.replicas 2, and a confluent-kafka producer (acks=all, idempotent,
  linger 5 ms) sending 1 KiB records as fast as it is allowed for `--seconds`: MB/s acknowledged, p50/p99 latency
  from produce() to the delivery callback, and the leader's CPU seconds per MB (from /proc).
It prints the ratio pykraft / raw (issue 14's goal: >= 25%). No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pykraft.node.local_cluster import LocalCluster  # noqa: E402

RECORD = b"r" * 1024
MIB = 1 << 20


def raw_bandwidth(directory: str, mib: int) -> float:
    path = os.path.join(directory, "raw.bin")
    block = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    try:
        for _ in range(mib):
            os.write(fd, block)
            os.fdatasync(fd)
    finally:
        os.close(fd)
        os.unlink(path)
    return mib / (time.perf_counter() - start)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_run(directory: str, seconds: float) -> tuple[float, float, float, float]:
    import confluent_kafka
    from e2e.data_plane_checks import partition, start_cluster

    cluster: LocalCluster = start_cluster(Path(directory) / "cluster", "bench")
    try:
        leader = partition(cluster, "bench").leader
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        latencies: list[float] = []
        acked = [0]
        producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                                             "linger.ms": 5, "queue.buffering.max.kbytes": 65536})
        sent_at: dict[int, float] = {}

        def on_delivery(i: int):
            def callback(error, _message) -> None:
                if error is None:
                    acked[0] += 1
                    latencies.append(time.perf_counter() - sent_at.pop(i))
            return callback

        cpu_before = cpu_seconds(cluster.nodes[leader].process.pid)
        start = time.perf_counter()
        i = 0
        while time.perf_counter() - start < seconds:
            try:
                sent_at[i] = time.perf_counter()
                producer.produce("bench", RECORD, on_delivery=on_delivery(i))
                i += 1
            except BufferError:
                sent_at.pop(i, None)
                producer.poll(0.01)
            producer.poll(0)
        producer.flush(60)
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(cluster.nodes[leader].process.pid) - cpu_before
    finally:
        cluster.stop_all(timeout=20)
    megabytes = acked[0] * len(RECORD) / MIB
    latencies.sort()
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else float("nan")
    return megabytes / elapsed, p50, p99, cpu / megabytes if megabytes else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--raw-mib", type=int, default=256)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="pykraft-produce-", dir=args.dir)
    try:
        raw = raw_bandwidth(directory, args.raw_mib)
        print(f"raw write+fdatasync (1 MiB blocks): {raw:8.1f} MB/s")
        rate, p50, p99, cpu_per_mb = produce_run(directory, args.seconds)
        print(f"pykraft acks=all RF3 1 KiB:         {rate:8.1f} MB/s  p50 {p50:.1f} ms  p99 {p99:.1f} ms  "
              f"leader CPU {cpu_per_mb:.3f} s/MB")
        print(f"ratio pykraft / raw:                {rate / raw:8.1%}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
