"""`pykraft quickstart`: format and start a local cluster, write a stream of records, show it working.

Every step goes through the same commands an operator types (`pykraft storage format`, `pykraft server start`) in
child processes; status comes from DescribeQuorum and writes are Produce requests to the raft leader. With
brokers (`--brokers`, default 3) the controller does its work too: the brokers register and get unfenced, a topic
is created through the admin client, kafka-python produces keyed records to it (acks=all, idempotent) for the
whole run (quickstart_records.py), and halfway through one broker is stopped with SIGTERM (controlled shutdown:
its leaderships move away) and started again (it registers anew and rejoins the ISRs). The run stops after
`--duration` seconds or on Ctrl-C: writers stop, the final `describe --status`, `describe --replication`, the
topic and the brokers are printed, every node gets SIGTERM (brokers first) and the exit code says whether every
node stopped cleanly, every acknowledged record is in every voter's log, every partition has a leader and every
record the brokers acknowledged was consumed back, in order per partition.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminClientError
from pykraft.admin.writer import MetadataLogWriter, WriteError
from pykraft.node.local_cluster import LocalCluster, LocalClusterError

from pykraft.records.client_history import PRODUCE_HISTORY_FILE

from .quickstart_records import BrokerWorkload, RecordCheck
from .quorum_output import replication_table, status_text
from .topics_output import broker_table, created_line, describe_lines

MARKER = "quickstart.txt"  # written at the root, so that --reset only ever deletes a quickstart directory
VALUE_SIZE = 100
TOPIC = "quickstart-events"
TOPIC_PARTITIONS = 6


@dataclass
class WriteStats:
    acked: int = 0
    failed: int = 0
    retried: int = 0
    last_offset: int = -1
    errors: list[str] = field(default_factory=list)
    leaderless: list[int] = field(default_factory=list)  # partitions of TOPIC without a leader at the end
    records: RecordCheck | None = None  # the records produced and consumed through the brokers


def prepare_directory(directory: Path, reset: bool) -> None:
    if directory.exists() and any(directory.iterdir()):
        if not reset:
            raise LocalClusterError(f"{directory} is not empty; give --reset to replace a previous quickstart")
        if not (directory / MARKER).exists():
            raise LocalClusterError(f"{directory} is not a quickstart directory (no {MARKER}); refusing to delete it")
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("created by pykraft quickstart; safe to delete\n")


def _value(seq: int) -> bytes:
    return f'{{"quickstart":{seq}}}'.encode().ljust(VALUE_SIZE, b" ")


async def _writer(writer: MetadataLogWriter, sequence: itertools.count, batch: int, interval_s: float,
                  stats: WriteStats, stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        values = [_value(next(sequence)) for _ in range(batch)]
        try:
            result = await writer.write(values)
        except (WriteError, AdminClientError) as exc:
            stats.failed += len(values)
            stats.errors.append(str(exc))
        else:
            stats.acked += len(values)
            stats.retried += len(values) if result.attempts > 1 else 0
            stats.last_offset = max(stats.last_offset, result.base_offset + len(values) - 1)
        await _sleep_until(stop, started + interval_s)


async def _sleep_until(stop: asyncio.Event, when: float) -> None:
    delay = when - time.monotonic()
    if delay > 0:
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            pass


def _status_line(info, stats: WriteStats, elapsed: float) -> str:  # QuorumInfo
    voters = " ".join(f"{v.replica_id}:{v.log_end_offset}" for v in info.voters)
    observers = " ".join(f"{o.replica_id}:{o.log_end_offset}" for o in info.observers) or "-"
    rate = stats.acked / elapsed if elapsed > 0 else 0.0
    return (f"[{elapsed:6.1f}s] leader {info.leader_id} epoch {info.leader_epoch} high watermark "
            f"{info.high_watermark} | voter LEOs {voters} | observers {observers} | acknowledged {stats.acked} "
            f"records ({rate:.0f}/s), failed {stats.failed}")


async def _wait_for_leader(admin: AdminClient, timeout_s: float):  # QuorumInfo
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            info = await admin.describe_quorum()
            if info.leader_id >= 0 and info.high_watermark >= 0:
                return info
        except AdminClientError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise LocalClusterError(f"no leader with a known high watermark after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


async def _drive(cluster: LocalCluster, duration_s: float, rate: int, status_interval_s: float,
                 stop: asyncio.Event) -> tuple[WriteStats, Any]:
    bootstrap = [n.address for n in cluster.nodes.values() if n.initial_voter]
    stats = WriteStats()
    async with AdminClient(bootstrap, deadline_ms=60_000) as admin, MetadataLogWriter(bootstrap) as writer:
        info = await _wait_for_leader(admin, 60)
        print(f"leader elected: node {info.leader_id} in epoch {info.leader_epoch}; writing {rate} records/s")
        brokers = cluster.broker_ids
        if brokers:
            await _wait_for_brokers(admin, brokers, 60)
            print(f"brokers {', '.join(map(str, brokers))} registered and unfenced")
            await admin.create_topics(TOPIC, TOPIC_PARTITIONS, min(3, len(brokers)))
            print(created_line(TOPIC))
            workload = BrokerWorkload(",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in brokers), TOPIC, rate,
                                      str(cluster.root / PRODUCE_HISTORY_FILE))
            workload.start()
        started = time.monotonic()
        writers_count, batch = 4, max(1, rate // 40)  # 4 writers x 10 batches/s each
        sequence = itertools.count()
        tasks = [asyncio.create_task(_writer(writer, sequence, batch, writers_count * batch / rate, stats, stop))
                 for _ in range(writers_count)]
        end = started + duration_s if duration_s > 0 else float("inf")
        bounce_at = started + duration_s / 2 if duration_s > 0 and brokers else None
        while not stop.is_set() and time.monotonic() < end:
            await _sleep_until(stop, min(time.monotonic() + status_interval_s, end))
            try:
                print(_status_line(await admin.describe_quorum(), stats, time.monotonic() - started), flush=True)
            except AdminClientError as exc:
                print(f"status unavailable: {exc}", flush=True)
            if bounce_at is not None and time.monotonic() >= bounce_at and not stop.is_set():
                bounce_at = None
                await _bounce_broker(cluster, brokers[-1])
        stop.set()
        await asyncio.gather(*tasks)
        if brokers:
            stats.records = await asyncio.to_thread(workload.stop_and_check)
        final = await _settled_quorum(admin, stats.last_offset)
        print()
        print(status_text(cluster.cluster_id, final))
        print()
        print(replication_table(final, human_readable=True, now_ms=int(time.time() * 1000)))
        if brokers:
            await _show_topic_and_brokers(admin, stats)
        return stats, final


async def _wait_for_brokers(admin: AdminClient, brokers: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            listed = {b.broker_id: b.fenced for b in await admin.list_brokers()}
            if all(listed.get(b) is False for b in brokers):
                return
        except AdminClientError:
            pass  # the controller may still be settling
        if time.monotonic() > deadline:
            raise LocalClusterError(f"brokers {brokers} were not all registered and unfenced after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


async def _bounce_broker(cluster: LocalCluster, broker: int) -> None:
    """SIGTERM (controlled shutdown: the controller moves its leaderships away first), then start it again."""
    code = await asyncio.to_thread(cluster.stop, broker)
    print(f"broker {broker}: controlled shutdown, exit code {code}; starting it again", flush=True)
    cluster.start(broker)


async def _show_topic_and_brokers(admin: AdminClient, stats: WriteStats) -> None:
    """The topic once the bounced broker is back in every ISR (or after 20 s), then the brokers."""
    deadline = time.monotonic() + 20
    while True:
        brokers = await admin.list_brokers()
        (topic,) = await admin.describe_topics([TOPIC])
        full = all(len(p.isr) == len(p.replicas) and p.leader is not None and p.leader >= 0 for p in topic.partitions)
        if full or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    stats.leaderless = [p.partition for p in topic.partitions if p.leader is None or p.leader < 0]
    print()
    print("\n".join(describe_lines([topic], {b.broker_id for b in brokers if not b.fenced})))
    print()
    print("\n".join(broker_table(brokers)))


async def _settled_quorum(admin: AdminClient, last_offset: int):  # QuorumInfo
    """DescribeQuorum once every voter has replicated past the last acknowledged record (or after 10 s)."""
    deadline = time.monotonic() + 10
    while True:
        info = await admin.describe_quorum()
        if all(v.log_end_offset > last_offset for v in info.voters) or time.monotonic() > deadline:
            return info
        await asyncio.sleep(0.2)


def run_quickstart(directory: Path | None, controllers: int, observers: int, duration_s: float, rate: int,
                   status_interval_s: float, reset: bool, brokers: int = 3) -> int:
    root = directory if directory is not None else Path(f"./pykraft-quickstart-{int(time.time())}")
    try:
        prepare_directory(root, reset)
        cluster = LocalCluster(root, controllers=controllers, observers=observers, brokers=brokers,
                               properties={"pykraft.produce.enable": "true"})
        print(f"formatting {controllers} controllers, {observers} observers and {brokers} brokers in {root} "
              f"(cluster id {cluster.cluster_id})")
        cluster.format_all()
        cluster.start_all()
    except (LocalClusterError, OSError) as exc:
        print(f"pykraft quickstart: {exc}", file=sys.stderr)
        return 1
    for node in cluster.nodes.values():
        role = "broker" if node.is_broker else "voter" if node.initial_voter else "observer"
        pid = node.process.pid if node.process is not None else "-"
        print(f"  node {node.node_id} ({role}) on 127.0.0.1:{node.port}, pid {pid}, log {node.log_path}")
    return _run_and_stop(cluster, duration_s, rate, status_interval_s)


def _run_and_stop(cluster: LocalCluster, duration_s: float, rate: int, status_interval_s: float) -> int:
    async def main() -> tuple[WriteStats, Any] | None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        return await _drive(cluster, duration_s, rate, status_interval_s, stop)

    outcome: tuple[WriteStats, Any] | None = None
    problem = None
    try:
        outcome = asyncio.run(main())
    except (AdminClientError, LocalClusterError) as exc:
        problem = str(exc)
    finally:
        print("\nstopping every node (SIGTERM: graceful resignation)")
        codes = cluster.stop_all()
    crashed = {node_id: code for node_id, code in codes.items() if code not in (0, None)}
    if crashed:
        problem = problem or f"nodes exited with errors: {crashed} (see their server.log)"
    if outcome is not None:
        stats, final = outcome
        lagging = [v.replica_id for v in final.voters if v.log_end_offset <= stats.last_offset]
        print(f"acknowledged {stats.acked} records (last offset {stats.last_offset}), failed {stats.failed}; "
              f"every voter holds them: {'yes' if not lagging else 'no, behind: ' + str(lagging)}")
        if stats.errors:
            print(f"first write error: {stats.errors[0]}")
        if lagging and problem is None:
            problem = f"voters {lagging} did not replicate every acknowledged record"
        if stats.leaderless and problem is None:
            problem = f"partitions {stats.leaderless} of {TOPIC} have no leader"
        if stats.records is not None:
            print(stats.records.line())
            if not stats.records.ok and stats.records.skipped is None and problem is None:
                problem = f"records through the brokers: {stats.records.line()}"
    first = next(iter(cluster.nodes.values()))
    print(f"inspect a log: pykraft dump-log {first.data_dir}/__cluster_metadata-0/00000000000000000000.log")
    if problem:
        print(f"pykraft quickstart: {problem}", file=sys.stderr)
        return 1
    return 0
