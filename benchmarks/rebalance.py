"""A 4th member joins a group of 3 consuming at full speed: the classic protocol against KIP-848, in the same run.

Run: .venv/bin/python benchmarks/rebalance.py [--partitions 12] [--rate 3000] [--rounds 2] [--dir D]
     [--consumer-heartbeat-ms 5000]

One cluster (1 controller, 3 brokers started by the CLI). For each protocol a topic of `--partitions` partitions is
fed by a producer at `--rate` records/s for the whole run; three member processes (librdkafka through
confluent-kafka: `group.protocol=classic` with its default eager range assignor, or `group.protocol=consumer`)
consume it, each recording when it read records and when its assignment changed; once they share the partitions,
a fourth joins. Reported per protocol (the median over `--rounds`):

- **join -> assigned**: from the 4th member's subscribe to its first assigned partition;
- **join -> settled**: until the four members own all partitions between them, each its share;
- **longest pause**: the longest gap in the three old members' reading while the group rebalanced (a classic eager
  rebalance stops every member; KIP-848 only moves the partitions that change hands);
- **longest gap before**: the same measure over the 10 s before the join (what a loaded machine shows anyway);
- **records read** in the 10 s before the join (the three) and after it (the four: nothing is lost either way).

Both protocols run with Kafka's default timings unless told otherwise (the consumer protocol's heartbeat is the
broker's group.consumer.heartbeat.interval.ms, 5 s by default; the classic member's heartbeat.interval.ms, 3 s).
No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WINDOW_S = 10.0


def member(servers: str, topic: str, group: str, protocol: str, stop, out, go=None) -> None:
    """One member process: reads and notes (time, records) per batch and (time, partitions) per change. The
    newcomer is started early and waits for `go`, so its interpreter's start is not in the measured window."""
    import confluent_kafka
    if go is not None:
        go.wait()
    config = {"bootstrap.servers": servers, "group.id": group, "group.protocol": protocol,
              "auto.offset.reset": "latest", "enable.auto.commit": True, "fetch.wait.max.ms": 50}
    consumer = confluent_kafka.Consumer(config)
    reads: list[tuple[float, int]] = []
    changes: list[tuple[float, int]] = []
    consumer.subscribe([topic])
    began, last = time.time(), None
    while not stop.is_set():
        batch = consumer.consume(500, timeout=0.05)
        now = time.time()
        if batch:
            reads.append((now, sum(1 for m in batch if m.error() is None)))
        owned = len(consumer.assignment())
        if owned != last:
            changes.append((now, owned))
            last = owned
    consumer.close()
    out.put({"began": began, "reads": reads, "changes": changes})


def producer(servers: str, topic: str, partitions: int, rate: int, stop: threading.Event) -> None:
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 5, "acks": 1})
    sent, began = 0, time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - began) * rate)
        for i in range(sent, due):
            p.produce(topic, b"x" * 100, partition=i % partitions)
        sent = max(sent, due)
        p.poll(0)
        time.sleep(0.005)
    p.flush(30)


def one_round(servers: str, protocol: str, topic: str, partitions: int, rate: int, tag: str) -> dict:
    ctx = multiprocessing.get_context("spawn")
    stop, out, go = ctx.Event(), ctx.Queue(), ctx.Event()
    group = f"bench-{protocol}-{tag}"
    feeding = threading.Event()
    feeder = threading.Thread(target=producer, args=(servers, topic, partitions, rate, feeding), daemon=True)
    feeder.start()
    olds = [ctx.Process(target=member, args=(servers, topic, group, protocol, stop, out)) for _ in range(3)]
    newcomer = ctx.Process(target=member, args=(servers, topic, group, protocol, stop, out, go))
    for process in [*olds, newcomer]:
        process.start()
    time.sleep(25)  # the three settle and read at full speed (a classic empty group waits its initial delay)
    joined = time.time()
    go.set()
    time.sleep(WINDOW_S + 20)
    stop.set()
    logs = [out.get(timeout=60) for _ in range(4)]
    for process in [*olds, newcomer]:
        process.join(30)
    feeding.set()
    feeder.join(30)
    return measure(logs, joined, partitions)


def measure(logs: list[dict], joined: float, partitions: int) -> dict:
    newcomer = max(logs, key=lambda log: log["began"])
    olds = [log for log in logs if log is not newcomer]
    assigned = next((t for t, n in newcomer["changes"] if n > 0), None)
    share = partitions // 4

    def owned_at(log: dict, moment: float) -> int:
        return next((n for t, n in reversed(log["changes"]) if t <= moment), 0)

    moments = sorted({t for log in logs for t, _ in log["changes"] if t >= joined})
    settled = next((t for t in moments if all(owned_at(log, t) == share for log in logs)), None)
    end = (settled or joined + WINDOW_S) + 1.0
    pauses = []
    for log in olds:
        times = [joined] + [t for t, n in log["reads"] if joined <= t <= end and n] + [end]
        pauses.append(max(b - a for a, b in zip(times, times[1:])))
    quiet = []  # the same measure over the span before the join: the noise floor of a loaded machine
    for log in olds:
        times = [t for t, n in log["reads"] if joined - WINDOW_S <= t < joined and n]
        quiet.append(max((b - a for a, b in zip(times, times[1:])), default=0.0))
    before = sum(n for log in olds for t, n in log["reads"] if joined - WINDOW_S <= t < joined)
    after = sum(n for log in logs for t, n in log["reads"] if joined <= t < joined + WINDOW_S)
    return {"join_to_assigned_s": None if assigned is None else assigned - joined,
            "join_to_settled_s": None if settled is None else settled - joined,
            "longest_pause_s": max(pauses), "longest_gap_before_s": max(quiet), "records_before": before,
            "records_after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--consumer-heartbeat-ms", type=int, default=5000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    from pykraft.node.local_cluster import LocalCluster
    from tests.e2e.data_plane_checks import DATA_PLANE_TIMING
    from tests.e2e.helpers import wait_for
    from tests.interop.conftest import unfenced_brokers

    root = Path(args.dir or tempfile.mkdtemp(prefix="rebalance-bench-")) / "cluster"
    heartbeat = str(args.consumer_heartbeat_ms)
    cluster = LocalCluster(root, controllers=1, brokers=3, properties={
        **DATA_PLANE_TIMING, "offsets.topic.num.partitions": "3",
        "group.consumer.heartbeat.interval.ms": heartbeat,
        "group.consumer.min.heartbeat.interval.ms": str(min(5000, args.consumer_heartbeat_ms))})
    cluster.format_all()
    cluster.start_all()
    results: dict[str, list[dict]] = {"classic": [], "consumer": []}
    try:
        wait_for(lambda: len(unfenced_brokers(cluster)) == 3, "three unfenced brokers", timeout=120)
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        for round_index in range(args.rounds):
            for protocol in ("classic", "consumer"):
                topic = f"bench-{protocol}-{round_index}"
                cluster.cli("topics", "create", "--bootstrap-server", servers.split(",")[0], "--topic", topic,
                            "--partitions", str(args.partitions), "--replication-factor", "3")
                result = one_round(servers, protocol, topic, args.partitions, args.rate, str(round_index))
                results[protocol].append(result)
                print(protocol, round_index, json.dumps(result), flush=True)
    finally:
        cluster.stop_all(timeout=30)
    report(results, args)


def report(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    def median(protocol: str, key: str) -> float | None:
        values = [r[key] for r in results[protocol] if r[key] is not None]
        return statistics.median(values) if values else None

    print(f"\n4th member joining 3 at {args.rate} records/s over {args.partitions} partitions "
          f"(median of {args.rounds}; consumer protocol heartbeat {args.consumer_heartbeat_ms} ms)")
    print(f"{'':24}{'classic (eager range)':>24}{'consumer (KIP-848)':>22}")
    for key, label in (("join_to_assigned_s", "join -> assigned (s)"), ("join_to_settled_s", "join -> settled (s)"),
                       ("longest_pause_s", "longest pause (s)"), ("longest_gap_before_s", "longest gap before (s)"),
                       ("records_before", "read 10 s before"),
                       ("records_after", "read 10 s after (all 4)")):
        values = [median(p, key) for p in ("classic", "consumer")]
        print(f"{label:24}" + "".join(f"{'-' if v is None else f'{v:.2f}':>24}" if i == 0 else
                                      f"{'-' if v is None else f'{v:.2f}':>22}" for i, v in enumerate(values)))
    classic, modern = median("classic", "longest_pause_s"), median("consumer", "longest_pause_s")
    if classic and modern:
        print(f"pause ratio classic / KIP-848: {classic / modern:.1f}")


if __name__ == "__main__":
    main()
