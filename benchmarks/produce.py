"""Produce benchmark: acks=all, replication factor 3, 1 KiB records through confluent-kafka, against the disk.

Run: .venv/bin/python benchmarks/produce.py [--quick] [--dir DIR] [--seconds S] [--raw-mib N] [--mode M]
     [--txn-records N] [--client KEY=VALUE ...]
(`.venv-compiled/bin/python` for the compiled build). Ends with one JSON line: the build in use, the raw and
ceiling figures and, per mode, MB/s, latency, its share of the ceiling and CPU ms/MB per process.

In one run and one directory it measures:
- raw: sequential os.write of 1 MiB blocks + os.fdatasync into a new file, the disk's bandwidth for this
  workload, three ways (see "The raw figure" below): 128 MiB (the figure printed before stop 24), then `--raw-mib`
  (1 GiB) into fresh pages, then the same again at once into the pages just freed. Each with its system CPU per MB,
  which says which kind of pages the write got;
- pykraft: a 1-controller, 3-broker cluster of real processes on 127.0.0.1, one topic (`--partitions`, 1 by
  default) with replication factor 3 and min.insync.replicas 2, and a confluent-kafka producer (acks=all)
  sending 1 KiB records as fast as it is allowed for `--seconds`: MB/s acknowledged, p50/p99 latency from
  produce() to the delivery report (librdkafka's own `Message.latency()`), and per MB: CPU milliseconds,
  user+system (from /proc), and minor page faults of every process: the leader, each follower (with several
  partitions: each broker), the controller and this client (librdkafka's threads included). The three brokers
  and the client share the machine's cores, so the sum is the budget that bounds the rate.
  Two producer modes (`--mode`), each on a fresh cluster whose directory is deleted after its run:
  - `idempotent` (librdkafka's default for safe producers): librdkafka counts *messages*, not requests, against
    its per-partition in-flight limit of 5 (rdkafka_broker.c, `RD_KAFKA_IDEMP_MAX_INFLIGHT - rktp_msgs_inflight`),
    so with batches of more than 5 records it keeps ONE ProduceRequest in flight per partition: the rate is
    batch size / one acks=all round trip (client, leader, follower fetch, follower's next fetch, answer);
  - `pipelined`: not idempotent, max.in.flight 5, the way Kafka's Java producer pipelines (5 requests in flight
    per connection, idempotent or not);
  - `transactional`: the idempotent producer inside transactions, committed every `--txn-records` records (10,000
    by default, ~10 MB): the cost of transactions is the coordinator's round trips (AddPartitionsToTxn, EndTxn),
    the KIP-890 verification of each transaction's first write, the markers and the wait for the commit.

The client settings (`CLIENT`, printed; `--client KEY=VALUE` overrides one), as a Kafka user sets them for a
throughput run:
- Nagle off (`socket.nagle.disable`), as Kafka's Java client always does (TCP_NODELAY): librdkafka leaves it on by
  default, and the tail of each ~1 MB ProduceRequest then waited for the broker's delayed ACK (idempotent mode, 2
  runs each: 6.8 -> 10.1 and 8.2 -> 18.4 MB/s, leader-side request p50 89 -> 65 and 88 -> 40 ms). The brokers'
  own sockets are asyncio's, TCP_NODELAY already.
- batch.size 1 MB (librdkafka's default), the request size every broker is sized for.
- A bounded queue (`queue.buffering.max.kbytes` 8 MiB, as Java's `buffer.memory` bounds its own): room for the
  5 requests the pipelined mode keeps in flight plus the next batches, not more (librdkafka's default, 1 GiB,
  and the 64 MiB used up to stop 23 only made the latency figures measure the queue: p50 0.4-1.5 s).
- `linger.ms` 1000, longer than a record waits in that queue. Stop 24 found why it matters: in idempotent mode
  librdkafka's broker thread busy-polls while its one ProduceRequest is in flight. `rd_kafka_toppar_producer_serve`
  sets the thread's next wake-up to max(now, oldest queued record's time + linger.ms) *before* it applies the
  idempotent in-flight cap and sends nothing, so once the queued records are older than linger.ms the thread
  calls poll(..., 0) back to back (strace: ~18,000 polls/s with timeout 0 on the leader's connection) until the
  answer arrives. With linger.ms 5 that spin was most of the client's 7-8 ms/MB and a whole core taken from the
  brokers. A longer linger costs nothing here: a full batch (batch.size) is sent at once whatever linger.ms says,
  and flush() sends the last partial one without waiting. Idempotent, A/B under load: client 7.6-8.3 -> 2.2-2.4
  ms/MB, all processes 12.7-13.1 -> 6.9-8.4, p50 latency 0.7-0.8 s -> 18-40 ms.

The raw figure. This VM (its virtio balloon has free page reporting on: freed guest memory goes back to the host)
gives a process's first write into page cache it has not touched lately ~1.5-2.5 ms/MB of system time, and ~0.3
ms/MB into pages freed a moment ago (a write loop of 1 GiB: ~300-430 MB/s the first time, ~1,350 MB/s repeated at
once; 5 s later they cost the full price again, in the one run that left the machine alone that long; and under the
other helpers' load a repeat was sometimes as costly as the first pass). The brokers' logs only grow, three copies
of every MB, so they write into fresh pages. Up to stop 23 the raw figure wrote 128 MiB once, and whether those
pages were fresh probably depended on what the machine had freed just before (the previous run's deleted cluster: it
read ~1,000 MB/s idle, 290-920 MB/s in this stop's runs). So the benchmark now prints the disk both ways, over 1
GiB, and the ratio to both: "fresh pages" is the one measured as the brokers write; "reused pages" the disk without
the VM's cost. Nothing in the brokers drops written pages to please this: consumers read the tail from that cache.

The ceiling (`produce_ceiling.py`): the same bytes moved by four bare processes with no protocol (client -> leader ->
two followers, each appending to a file), measured in the same run after the raw passes, each side after a pause
that lets freed pages go back to the host. It bounds what any broker can do on the machine of the run: the raw disk
bounds one process's write+fdatasync loop, the ceiling the copies that three replicas on shared cores pay.

It prints the ratio pykraft / raw (issue 14's goal: >= 25%) and pykraft / ceiling. No thresholds: the numbers are for
people.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pykraft.cli.build_info import build_fields
from pykraft.node.local_cluster import LocalCluster
from produce_ceiling import relay_ceiling  # benchmarks/ is on the path as the script's folder

RECORD = b"r" * 1024
MIB = 1 << 20
RAW_OLD_MIB = 128
RAW_SETTLE_SECONDS = 5.0


def raw_pass(directory: str, mib: int) -> tuple[float, float]:
    """One sequential write+fdatasync of `mib` 1 MiB blocks into a new file, deleted after: (MB/s, system CPU ms per
    MB). The system time says which pages the write got: ~0.3 ms/MB into pages the guest just freed, ~1.5-2.5 into
    pages it has not touched lately (see the module docstring)."""
    path = os.path.join(directory, "raw.bin")
    block = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    system_before = os.times().system
    start = time.perf_counter()
    try:
        for _ in range(mib):
            os.write(fd, block)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - start
        system = os.times().system - system_before
    finally:
        os.close(fd)
        os.unlink(path)
    return mib / elapsed, 1000 * system / mib


def raw_bandwidth(directory: str, mib: int) -> dict[str, tuple[str, float, float]]:
    """The disk measured three ways (module docstring), each as (label, MB/s, system ms/MB): `old`, the short
    figure printed before; `fresh`, `mib` MiB into pages not touched lately; `reused`, the same again at once, into
    the pages `fresh` just freed."""
    old = raw_pass(directory, RAW_OLD_MIB)
    time.sleep(RAW_SETTLE_SECONDS)  # the pages `old` freed go back to the host first
    fresh = raw_pass(directory, mib)
    return {"old": (f"{RAW_OLD_MIB} MiB, new file (the figure before stop 24)", *old),
            "fresh": (f"{mib} MiB, new file, fresh pages", *fresh),
            "reused": (f"{mib} MiB again at once, reused pages", *raw_pass(directory, mib))}


def usage(pid: int) -> tuple[float, float, float]:
    """(user CPU seconds, system CPU seconds, minor page faults) of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, float(fields[7])


# The throughput settings the module docstring explains: a bounded queue, linger.ms longer than a record waits in
# it (librdkafka's idempotent busy-poll), Nagle off (Kafka's Java client always sets TCP_NODELAY); batch.size is
# librdkafka's default, spelled out so the output says what was measured.
CLIENT = {"acks": "all", "linger.ms": 1000, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 8192,
          "socket.nagle.disable": True}
MODES = {"idempotent": {"enable.idempotence": True},
         "pipelined": {"enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
         "transactional": {"transactional.id": "bench", "transaction.timeout.ms": 60000}}
TXN_RECORDS = 10_000  # records per transaction in the transactional mode (--txn-records)


def _minus(after: tuple[float, ...], before: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(a - b for a, b in zip(after, before))


def record_budget(directory: Path) -> int:
    """How many records the brokers' three copies can hold on the disk, keeping a fifth of its free space."""
    free = shutil.disk_usage(directory).free
    return int(free * 0.8 / 3 / len(RECORD))


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


def produce_run(directory: str, seconds: float, mode: str, partitions: int, client: dict[str, object],
                txn_records: int = TXN_RECORDS) -> tuple[float, float, float, dict[str, tuple[float, ...]]]:
    import confluent_kafka
    from e2e.data_plane_checks import start_cluster

    root = Path(directory) / f"cluster-{mode}"
    cluster: LocalCluster = start_cluster(root, "bench", partitions=partitions)
    try:
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        latencies: list[float] = []
        acked = [0]
        producer = confluent_kafka.Producer({"bootstrap.servers": servers, **client, **MODES[mode]})

        def on_delivery(error, message) -> None:  # one callback for all: the client's CPU is shared with the brokers
            if error is None:
                acked[0] += 1
                latency = message.latency()
                if latency is not None:
                    latencies.append(latency)

        producer.list_topics("bench", timeout=30)  # connected and the leader known before the clock starts
        transactional = "transactional.id" in MODES[mode]
        if transactional:
            producer.init_transactions(60)
            producer.begin_transaction()
        roles = _roles(cluster, partitions)
        cpu_before = {node_id: usage(cluster.nodes[node_id].process.pid) for node_id in roles}
        client_before = usage(os.getpid())
        budget = record_budget(root)
        start = time.perf_counter()
        produce = producer.produce
        sent = 0
        while time.perf_counter() - start < seconds and sent < budget:
            # The harness shares the cores with the brokers: one clock read and one poll per 100 records, not per
            # record (every delivery report is still served, by the next poll or the flush).
            for _ in range(100):
                try:
                    produce("bench", RECORD, on_delivery=on_delivery)
                    sent += 1
                except BufferError:
                    producer.poll(0.01)
                if transactional and sent % txn_records == 0:
                    producer.commit_transaction(120)  # flushes, then EndTxn and the markers
                    producer.begin_transaction()
            producer.poll(0)
        if sent >= budget:
            print(f"    (stopped after {time.perf_counter() - start:.1f} s: three copies of more would not fit on "
                  f"the disk)")
        if transactional:
            producer.commit_transaction(120)
        producer.flush(120)
        elapsed = time.perf_counter() - start
        cpu = {roles[n]: _minus(usage(cluster.nodes[n].process.pid), cpu_before[n]) for n in sorted(roles)}
        cpu["client"] = _minus(usage(os.getpid()), client_before)
        producer.close()  # before the cluster stops: librdkafka would log each broker's disconnect on stderr
    finally:
        cluster.stop_all(timeout=20)
        shutil.rmtree(root, ignore_errors=True)  # each copy of each MB produced is on disk: 3 GB per 1,000 MB
    megabytes = acked[0] * len(RECORD) / MIB
    latencies.sort()
    p50 = statistics.median(latencies) * 1000 if latencies else float("nan")
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000 if latencies else float("nan")
    per_mb = {role: tuple(value / megabytes if megabytes else float("nan") for value in values)
              for role, values in cpu.items()}
    return megabytes / elapsed, p50, p99, per_mb


def _client_setting(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (a librdkafka property), got {text!r}")
    return key, value


def _client_problem(settings: dict[str, object]) -> str | None:
    """librdkafka's own complaint about a producer configuration, or None (no cluster needed to ask it)."""
    import confluent_kafka

    try:
        confluent_kafka.Producer({**settings, "bootstrap.servers": "127.0.0.1:9", "log_level": 0})
    except (confluent_kafka.KafkaException, TypeError, ValueError) as exc:
        return str(exc.args[0] if exc.args else exc)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--raw-mib", type=int, default=1024,
                        help="MiB written by each of the two long raw passes (fresh pages, then reused pages)")
    parser.add_argument("--ceiling-seconds", type=float, default=5.0,
                        help="how long the no-protocol relay (the ceiling) streams")
    parser.add_argument("--mode", choices=(*MODES, "both", "all"), default="all",
                        help="both: idempotent and pipelined; all: those and transactional (the default)")
    parser.add_argument("--partitions", type=int, default=1,
                        help="partitions of the topic (leaders spread over the brokers as Kafka assigns them); "
                             "with one, the rate is bounded by one follower fetch round trip per MB fetched")
    parser.add_argument("--txn-records", type=int, default=TXN_RECORDS,
                        help="records per transaction in the transactional mode")
    parser.add_argument("--client", type=_client_setting, action="append", default=[], metavar="KEY=VALUE",
                        help="a librdkafka property over the defaults printed (repeatable)")
    parser.add_argument("--quick", action="store_true",
                        help="5 s per mode, 256 MiB raw passes, a 3 s ceiling, idempotent and pipelined only "
                             "(explicit options win)")
    args = parser.parse_args()
    if args.quick:
        given = set(sys.argv[1:])
        for option, value in (("--seconds", 5.0), ("--raw-mib", 256), ("--ceiling-seconds", 3.0), ("--mode", "both")):
            if not any(arg == option or arg.startswith(option + "=") for arg in given):
                setattr(args, option[2:].replace("-", "_"), value)
    client = {**CLIENT, **dict(args.client)}
    modes = {"all": tuple(MODES), "both": ("idempotent", "pipelined")}.get(args.mode, (args.mode,))
    for mode in modes:  # a wrong property fails here, before any cluster is started
        problem = _client_problem({**client, **MODES[mode]})
        if problem:
            parser.error(f"--client: {problem}")
    directory = tempfile.mkdtemp(prefix="pykraft-produce-", dir=args.dir)
    try:
        raw = raw_bandwidth(directory, args.raw_mib)
        for label, rate, system in raw.values():
            print(f"raw write+fdatasync (1 MiB blocks), {label}: {rate:8.1f} MB/s  system CPU {system:.2f} ms/MB")
        fresh, reused = raw["fresh"][1], raw["reused"][1]
        time.sleep(RAW_SETTLE_SECONDS)  # the pages the raw passes freed go back to the host: the relay gets fresh ones
        ceiling, ceiling_cpu = relay_ceiling(directory, args.ceiling_seconds)
        shares = "  ".join(f"{role} {cpu:.2f}" for role, cpu in ceiling_cpu.items())
        print(f"ceiling: the same bytes with no protocol (client -> leader -> 2 followers, each appending to a file): "
              f"{ceiling:8.1f} MB/s, {ceiling / fresh:.1%} of raw (fresh pages), {ceiling / reused:.1%} (reused); "
              f"CPU ms/MB: {shares}  all {sum(ceiling_cpu.values()):.2f}")
        time.sleep(RAW_SETTLE_SECONDS)
        print("client: " + ", ".join(f"{k}={v}" for k, v in client.items()))
        summary: dict[str, object] = {"bench": "produce", "quick": args.quick, **build_fields(),
                                      "partitions": args.partitions, "raw_fresh_mb_s": fresh,
                                      "raw_reused_mb_s": reused, "ceiling_mb_s": ceiling}
        for mode in modes:
            rate, p50, p99, cpu_per_mb = produce_run(directory, args.seconds, mode, args.partitions, client,
                                                     args.txn_records)
            busiest = max((role for role in cpu_per_mb if role not in ("client", "controller")),
                          key=lambda role: sum(cpu_per_mb[role][:2]))
            print(f"pykraft acks=all RF3 1 KiB, {args.partitions} partition(s), {mode:10s} ({MODES[mode]}): "
                  f"{rate:8.1f} MB/s  p50 {p50:.1f} ms  p99 {p99:.1f} ms  {busiest} CPU "
                  f"{1000 * sum(cpu_per_mb[busiest][:2]):.2f} ms/MB  ratio to raw {rate / fresh:6.1%} "
                  f"(fresh pages, as the brokers' growing logs get), {rate / reused:6.1%} (reused pages), "
                  f"{rate / ceiling:6.1%} of the ceiling")
            shares = "  ".join(f"{role} {1000 * (u + s):.2f} ({1000 * u:.2f}+{1000 * s:.2f})"
                               for role, (u, s, _) in cpu_per_mb.items())
            total = 1000 * sum(u + s for u, s, _ in cpu_per_mb.values())
            print(f"    CPU ms/MB (user+sys): {shares}  all {total:.2f}")
            faults = "  ".join(f"{role} {f:.0f}" for role, (_, _, f) in cpu_per_mb.items())
            print(f"    minor page faults per MB (4 KiB pages: 256 per MB touched anew): {faults}")
            summary[mode] = {"mb_s": rate, "p50_ms": p50, "p99_ms": p99, "of_ceiling": rate / ceiling,
                             "cpu_ms_per_mb": {role: 1000 * (u + s) for role, (u, s, _) in cpu_per_mb.items()}}
        print(json.dumps(summary))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
