"""Produce benchmark: acks=all, replication factor 3, 1 KiB records through confluent-kafka, against the disk.

Run: .venv/bin/python benchmarks/produce.py [--dir DIR] [--seconds S] [--raw-mib N]

In one run and one directory it measures:
- raw: sequential os.write of 1 MiB blocks + os.fdatasync, the disk's physical bandwidth for this workload;
- pykraft: a 1-controller, 3-broker cluster of real processes on 127.0.0.1, one topic (`--partitions`, 1 by
  default) with replication factor 3 and min.insync.replicas 2, and a confluent-kafka producer (acks=all,
  linger 5 ms) sending 1 KiB records as fast as it is allowed for `--seconds`: MB/s acknowledged, p50/p99
  latency from produce() to the delivery report (librdkafka's own `Message.latency()`), and CPU milliseconds per
  MB, user+system (from /proc), of every process: the leader, each follower (with several partitions: each
  broker), the controller and this client (librdkafka's threads included). The three brokers and the client
  share the machine's cores, so the sum is the budget that bounds the rate.
  Two producer modes (`--mode`), each on a fresh cluster:
  - `idempotent` (librdkafka's default for safe producers): librdkafka counts *messages*, not requests, against
    its per-partition in-flight limit of 5 (rdkafka_broker.c, `RD_KAFKA_IDEMP_MAX_INFLIGHT - rktp_msgs_inflight`),
    so with batches of more than 5 records it keeps ONE ProduceRequest in flight per partition: the rate is
    batch size / one acks=all round trip (client, leader, follower fetch, follower's next fetch, answer);
  - `pipelined`: not idempotent, max.in.flight 5, the way Kafka's Java producer pipelines (5 requests in flight
    per connection, idempotent or not).
  Both disable Nagle's algorithm on the client (`socket.nagle.disable`), as Kafka's Java client always does
  (TCP_NODELAY): librdkafka leaves it on by default, and the tail of each ~1 MB ProduceRequest then waited for
  the broker's delayed ACK (idempotent mode, 2 runs each: 6.8 -> 10.1 and 8.2 -> 18.4 MB/s, leader-side request
  p50 89 -> 65 and 88 -> 40 ms). The brokers' own sockets are asyncio's, TCP_NODELAY already.
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


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


# librdkafka's defaults except the bounded queue (its default is 1 GiB: the latency figures would only measure how
# long the queue is) and Nagle off (Kafka's Java client always sets TCP_NODELAY). linger.ms 5 and batch.size 1 MB
# are librdkafka's defaults, spelled out so the output says what was measured.
CLIENT = {"acks": "all", "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 65536,
          "socket.nagle.disable": True}
MODES = {"idempotent": {"enable.idempotence": True},
         "pipelined": {"enable.idempotence": False, "max.in.flight.requests.per.connection": 5}}


def own_cpu_seconds() -> tuple[float, float]:
    times = os.times()
    return times.user, times.system


def _minus(after: tuple[float, float], before: tuple[float, float]) -> tuple[float, float]:
    return after[0] - before[0], after[1] - before[1]


def _roles(cluster: LocalCluster, partitions: int) -> dict[int, str]:
    """What each process is: with one partition its leader and followers, with several how many each broker leads."""
    from e2e.data_plane_checks import partition

    leaders = [partition(cluster, "bench", index).leader for index in range(partitions)]
    roles = {}
    for node_id in cluster.nodes:
        if node_id in cluster.controller_ids:
            roles[node_id] = "controller"
        elif partitions == 1:
            roles[node_id] = "leader" if node_id == leaders[0] else f"follower {node_id}"
        else:
            roles[node_id] = f"broker {node_id} (leads {leaders.count(node_id)})"
    return roles


def produce_run(directory: str, seconds: float, mode: str, partitions: int
                ) -> tuple[float, float, float, dict[str, tuple[float, float]]]:
    import confluent_kafka
    from e2e.data_plane_checks import start_cluster

    cluster: LocalCluster = start_cluster(Path(directory) / f"cluster-{mode}", "bench", partitions=partitions)
    try:
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        latencies: list[float] = []
        acked = [0]
        producer = confluent_kafka.Producer({"bootstrap.servers": servers, **CLIENT, **MODES[mode]})

        def on_delivery(error, message) -> None:  # one callback for all: the client's CPU is shared with the brokers
            if error is None:
                acked[0] += 1
                latency = message.latency()
                if latency is not None:
                    latencies.append(latency)

        producer.list_topics("bench", timeout=30)  # connected and the leader known before the clock starts
        roles = _roles(cluster, partitions)
        cpu_before = {node_id: cpu_seconds(cluster.nodes[node_id].process.pid) for node_id in roles}
        client_before = own_cpu_seconds()
        start = time.perf_counter()
        produce = producer.produce
        while time.perf_counter() - start < seconds:
            # The harness shares the cores with the brokers: one clock read and one poll per 100 records, not per
            # record (every delivery report is still served, by the next poll or the flush).
            for _ in range(100):
                try:
                    produce("bench", RECORD, on_delivery=on_delivery)
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        producer.flush(120)
        elapsed = time.perf_counter() - start
        cpu = {roles[n]: _minus(cpu_seconds(cluster.nodes[n].process.pid), cpu_before[n]) for n in sorted(roles)}
        cpu["client"] = _minus(own_cpu_seconds(), client_before)
    finally:
        cluster.stop_all(timeout=20)
    megabytes = acked[0] * len(RECORD) / MIB
    latencies.sort()
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else float("nan")
    per_mb = {role: (user / megabytes, system / megabytes) if megabytes else (float("nan"),) * 2
              for role, (user, system) in cpu.items()}
    return megabytes / elapsed, p50, p99, per_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--raw-mib", type=int, default=256)
    parser.add_argument("--mode", choices=(*MODES, "both"), default="both")
    parser.add_argument("--partitions", type=int, default=1,
                        help="partitions of the topic (leaders spread over the brokers as Kafka assigns them); "
                             "with one, the rate is bounded by one follower fetch round trip per MB fetched")
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="pykraft-produce-", dir=args.dir)
    try:
        raw = raw_bandwidth(directory, args.raw_mib)
        print(f"raw write+fdatasync (1 MiB blocks): {raw:8.1f} MB/s")
        print("client: " + ", ".join(f"{k}={v}" for k, v in CLIENT.items()))
        for mode in MODES if args.mode == "both" else (args.mode,):
            rate, p50, p99, cpu_per_mb = produce_run(directory, args.seconds, mode, args.partitions)
            busiest = max((role for role in cpu_per_mb if role not in ("client", "controller")),
                          key=lambda role: sum(cpu_per_mb[role]))
            print(f"pykraft acks=all RF3 1 KiB, {args.partitions} partition(s), {mode:10s} ({MODES[mode]}): "
                  f"{rate:8.1f} MB/s  p50 {p50:.1f} ms  p99 {p99:.1f} ms  {busiest} CPU "
                  f"{1000 * sum(cpu_per_mb[busiest]):.2f} ms/MB  ratio to raw {rate / raw:6.1%}")
            shares = "  ".join(f"{role} {1000 * (u + s):.2f} ({1000 * u:.2f}+{1000 * s:.2f})"
                               for role, (u, s) in cpu_per_mb.items())
            total = 1000 * sum(u + s for u, s in cpu_per_mb.values())
            print(f"    CPU ms/MB (user+sys): {shares}  all {total:.2f}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
