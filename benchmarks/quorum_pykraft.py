"""The pykraft side of benchmarks/quorum.py: a 3-voter quorum of real `pykraft server start` processes.

Every figure goes through the public write path (Produce acks=-1 through `MetadataLogWriter`, answered once
committed), so the client, the network and the leader's fsync (on, the default) are all inside the measurement.
Raft timeouts are Kafka's defaults unless `properties` says otherwise (only the latency row run with
append.linger.ms=0 changes anything, and it says so).

Throughput writers run in `client_procs` separate processes (each with `tasks` concurrent writers sharing one
pipelined connection), because one Python client process can be the bottleneck; quorum.py reports the client
processes' CPU use next to the servers' so the reader can see which side saturates.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pstats
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bare_processes import own_cpu_seconds
from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminClientError
from pykraft.admin.writer import MetadataLogWriter, WriteError
from pykraft.node.local_cluster import CLI, LocalCluster, LocalClusterError

PAYLOAD = b"x" * 100
Address = tuple[str, int]


def rss_kib(pid: int) -> int:
    """VmRSS of a live process, in KiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process from /proc/<pid>/stat (0.0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ProfiledCluster(LocalCluster):
    """A LocalCluster whose servers run under cProfile (written to <node dir>/server.prof at SIGTERM)."""

    def start(self, node_id: int):  # LocalNode
        node = self.nodes[node_id]
        if node.is_running():
            return node
        profile = node.directory / "server.prof"
        with open(node.log_path, "ab") as log:
            command = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", *CLI[2:],
                       "server", "start", "--config", str(node.config_path)]
            node.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return node


@dataclass
class PykraftQuorum:
    root: Path
    properties: Mapping[str, str]
    profile: bool = False

    def __post_init__(self) -> None:
        kind = ProfiledCluster if self.profile else LocalCluster
        self.cluster = kind(self.root, controllers=3, properties={"pykraft.produce.enable": "true",
                                                                  **self.properties})
        self.bootstrap: list[Address] = [n.address for n in self.cluster.nodes.values()]

    def start(self) -> None:
        self.cluster.format_all()
        self.cluster.start_all()
        asyncio.run(self.wait_ready(60))

    def pids(self) -> dict[int, int]:
        return {i: n.process.pid for i, n in self.cluster.nodes.items() if n.is_running()}

    async def wait_ready(self, timeout_s: float, caught_up: bool = True) -> tuple[int, int]:
        """Waits for a leader with a high watermark (and, with `caught_up`, every voter's LEO at or past it);
        returns (leader id, high watermark)."""
        deadline = time.monotonic() + timeout_s
        async with AdminClient(self.bootstrap, deadline_ms=5000, request_timeout_ms=2000) as admin:
            while time.monotonic() < deadline:
                try:
                    info = await admin.describe_quorum()
                except AdminClientError:
                    info = None
                if info is not None and info.leader_id >= 0 and info.high_watermark >= 0:
                    behind = [v for v in info.voters if v.log_end_offset < info.high_watermark]
                    if not caught_up or (len(info.voters) == 3 and not behind):
                        return info.leader_id, info.high_watermark
                await asyncio.sleep(0.2)
        raise LocalClusterError(f"no ready quorum within {timeout_s:.0f} s")

    def leader(self) -> int:
        return asyncio.run(self.wait_ready(60, caught_up=False))[0]

    def stop(self) -> None:
        self.cluster.stop_all()

    def profile_path(self, node_id: int) -> Path:
        return self.cluster.nodes[node_id].directory / "server.prof"


# ---- throughput: client processes ----


async def _writer_task(writer: MetadataLogWriter, batch: int, until: float, counts: list[int]) -> None:
    values = [PAYLOAD] * batch
    while time.monotonic() < until:
        try:
            await writer.write(values)
        except (WriteError, AdminClientError):
            counts[1] += batch
            continue
        counts[0] += batch


async def _client_main(bootstrap: list[Address], tasks: int, batch: int, seconds: float
                       ) -> tuple[int, int, float]:
    """(acked, failed, CPU seconds used while writing: from the clock's start, so the process's start-up, imports
    and the warm-up write, a third of a client's CPU in a 5 s run, are not counted per record)."""
    async with MetadataLogWriter(bootstrap) as writer:
        await writer.write([PAYLOAD])  # find the leader and open the connection before the clock starts
        counts = [0, 0]
        cpu_before = own_cpu_seconds()
        until = time.monotonic() + seconds
        await asyncio.gather(*(_writer_task(writer, batch, until, counts) for _ in range(tasks)))
        cpu_s = own_cpu_seconds() - cpu_before
    return counts[0], counts[1], cpu_s


def _client_process(bootstrap: list[Address], tasks: int, batch: int, seconds: float, start_at: float,
                    out: multiprocessing.Queue) -> None:
    time.sleep(max(0.0, start_at - time.time()))
    started = time.perf_counter()
    acked, failed, cpu_s = asyncio.run(_client_main(bootstrap, tasks, batch, seconds))
    out.put((acked, failed, time.perf_counter() - started, cpu_s))


@dataclass(frozen=True, slots=True)
class Throughput:
    committed: int
    failed: int
    seconds: float
    client_cpu_s: float  # CPU used by all client processes together while writing (start-up not counted)
    server_cpu_s: dict[int, float]  # CPU used by each server during the run
    loaded_rss_kib: dict[int, int]

    @property
    def rate(self) -> float:
        return self.committed / self.seconds if self.seconds else 0.0


def throughput(quorum: PykraftQuorum, client_procs: int, tasks: int, batch: int, seconds: float) -> Throughput:
    pids = quorum.pids()
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    start_at = time.time() + 1.5  # every client starts writing at once, after the spawn cost
    procs = [context.Process(target=_client_process, args=(quorum.bootstrap, tasks, batch, seconds, start_at, out))
             for _ in range(client_procs)]
    for proc in procs:
        proc.start()
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = {i: cpu_seconds(pid) for i, pid in pids.items()}
    time.sleep(seconds / 2)
    loaded = {i: rss_kib(pid) for i, pid in pids.items()}
    results = [out.get(timeout=seconds + 120) for _ in procs]
    cpu_after = {i: cpu_seconds(pid) for i, pid in pids.items()}
    for proc in procs:
        proc.join(timeout=30)
    return Throughput(committed=sum(r[0] for r in results), failed=sum(r[1] for r in results),
                      seconds=max(r[2] for r in results), client_cpu_s=sum(r[3] for r in results),
                      server_cpu_s={i: cpu_after[i] - cpu_before[i] for i in pids}, loaded_rss_kib=loaded)


# ---- latency: one writer, one record per request, sequential ----


def latency(quorum: PykraftQuorum, count: int) -> list[float]:
    async def main() -> list[float]:
        samples = []
        async with MetadataLogWriter(quorum.bootstrap) as writer:
            for _ in range(20):  # warm-up: leader lookup, connection, code paths
                await writer.write([PAYLOAD])
            for _ in range(count):
                start = time.perf_counter()
                await writer.write([PAYLOAD])
                samples.append((time.perf_counter() - start) * 1000)
        return samples

    return asyncio.run(main())


PROBE_ENV = "PYKRAFT_COMMIT_PROBE"  # net/commit_probe.py; read by each server process at import
WARMUP_WRITES = 20  # latency()'s warm-up writes, left out of the in-leader figure too
PRODUCE_API_KEY = 0


def latency_with_probe(root: Path, properties: Mapping[str, str], count: int
                       ) -> tuple[list[float], list[float], dict[str, float]]:
    """`latency` on a quorum started with the commit probe on, timed two ways over the same writes: end to end in
    the client process (what a client sees), and the way PySyncObj's is timed, inside its leader
    (quorum_peer_pysyncobj.py): from the leader reading a Produce frame to the leader starting to write its answer,
    once committed (the probe's srv_in and srv_out stamps, net/server.py). One run for both, so the two figures
    differ only by the client's side of the path (separate quorums differ by more than that from run to run). The
    probe costs the servers a clock read and a list append per stamp, a few microseconds per commit; the client
    process is not probed. The third result is the CPU each process spent per commit over those writes (µs, user +
    system, warm-up included): with four processes on two cores, what one commit costs in all is also what the
    others wait for, and it moves far less from run to run than the latency does."""
    prefix = root / "probe"
    os.environ[PROBE_ENV] = str(prefix)
    try:
        quorum = PykraftQuorum(root / "quorum", properties)
        quorum.start()  # the servers inherit the variable; this process imported the probe long ago (off)
    finally:
        del os.environ[PROBE_ENV]
    try:
        leader = quorum.leader()
        pids = quorum.pids()
        cpu_before = {node: cpu_seconds(pid) for node, pid in pids.items()}
        client_before = own_cpu_seconds()
        end_to_end = latency(quorum, count)
        writes = count + WARMUP_WRITES
        cpu_us = {("leader" if node == leader else f"follower {node}"):
                  (cpu_seconds(pid) - cpu_before[node]) * 1e6 / writes for node, pid in pids.items()}
        cpu_us["client"] = (own_cpu_seconds() - client_before) * 1e6 / writes
        leader_pid = pids[leader]
    finally:
        quorum.stop()  # the servers write their probe files at exit
    return end_to_end, produce_times_ms(Path(f"{prefix}.{leader_pid}"))[WARMUP_WRITES:], cpu_us


def produce_times_ms(probe_file: Path) -> list[float]:
    """Per Produce the leader read, in order: ms from its frame read (srv_in, offset = connection, peer = api
    key) to the next answer write on that connection (srv_out, offset = connection)."""
    rows = sorted((line.split("\t") for line in probe_file.read_text().splitlines()), key=lambda row: int(row[0]))
    open_since: dict[str, int] = {}
    times = []
    for t, event, connection, peer in rows:
        if event == "srv_in" and int(peer) == PRODUCE_API_KEY:
            open_since[connection] = int(t)
        elif event == "srv_out" and connection in open_since:
            times.append((int(t) - open_since.pop(connection)) / 1e6)
    return times


# ---- failover: SIGKILL (or SIGSTOP) the leader under a sequential writer ----


async def _failover_once(quorum: PykraftQuorum, timeout_s: float, how: signal.Signals) -> float:
    leader, _ = await quorum.wait_ready(120)
    # Short client-side retry backoff so the client does not add its own waiting to the measurement.
    async with MetadataLogWriter(quorum.bootstrap, request_timeout_ms=1000, deadline_ms=int(timeout_s * 1000),
                                 retry_backoff_ms=10, retry_backoff_max_ms=50) as writer:
        acks: list[tuple[float, float, int]] = []  # (call start, ack, attempts)
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                start = time.monotonic()
                try:
                    result = await writer.write([PAYLOAD])
                except (WriteError, AdminClientError):
                    continue
                acks.append((start, time.monotonic(), result.attempts))

        task = asyncio.create_task(ticker())
        await asyncio.sleep(1.0)
        process = quorum.cluster.nodes[leader].process
        killed_at = time.monotonic()
        os.kill(process.pid, how)
        first = None
        while first is None and time.monotonic() - killed_at < timeout_s:
            await asyncio.sleep(0.01)
            # An ack from the new leader: a write begun after the kill, or one that needed a retry.
            first = next((ack for begun, ack, attempts in acks
                          if ack > killed_at and (begun > killed_at or attempts > 1)), None)
        if how is signal.SIGSTOP:
            os.kill(process.pid, signal.SIGCONT)  # the old leader wakes up as a deposed leader and follows
        stop.set()
        await task
    if how is signal.SIGKILL:
        process.wait(timeout=30)
        quorum.cluster.start(leader)
    await quorum.wait_ready(120)
    if first is None:
        return float("inf")
    return first - killed_at


def failover(quorum: PykraftQuorum, runs: int, timeout_s: float = 30, how: signal.Signals = signal.SIGKILL
             ) -> list[float]:
    """Seconds from the signal to the first write acknowledged by a new leader, per run; inf for a run that never
    recovered within `timeout_s`. SIGSTOP leaves every socket open, so the followers must wait out their fetch
    timeout (nothing refuses or resets a connection); SIGKILL lets them see the leader's process is gone."""
    return [asyncio.run(_failover_once(quorum, timeout_s, how)) for _ in range(runs)]


def top_costs(path: Path, limit: int) -> list[str]:
    """The `limit` functions with the most own time in a cProfile dump, as lines."""
    stats = pstats.Stats(str(path))
    total = stats.total_tt
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:limit]  # type: ignore[attr-defined]
    lines = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in rows:
        where = filename.split("site-packages/")[-1].split("/src/")[-1]
        lines.append(f"{100 * tottime / total:5.1f}%  own {tottime:6.2f}s  cum {cumtime:6.2f}s  "
                     f"{calls:>9} calls  {name} ({where}:{line})")
    return lines


__all__ = ["PykraftQuorum", "Throughput", "cpu_seconds", "failover", "latency", "latency_with_probe", "rss_kib",
           "throughput", "top_costs"]
