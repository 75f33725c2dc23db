"""The PySyncObj side of benchmarks/quorum.py: three `quorum_peer_pysyncobj.py` processes on 127.0.0.1.

Each peer keeps its journal on disk (`<root>/node-<i>.journal`), which PySyncObj memory-maps and never fsyncs:
the figures here are for a NON-durable log, unlike pykraft's. `batch` picks appendEntriesUseBatch (True for the
throughput run, its best; False for the latency run, its best), so the two runs use separate clusters.
Commands are issued inside the peer processes (PySyncObj's API is in-process), on the leader for throughput and
latency, on a follower for failover.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from pykraft.node.local_cluster import free_ports

from quorum_pykraft import cpu_seconds, rss_kib

PEER = Path(__file__).with_name("quorum_peer_pysyncobj.py")


class PeerError(Exception):
    """A peer died, answered an error, or the cluster did not become ready."""


class PeerCluster:
    def __init__(self, root: Path, batch: bool) -> None:
        self.root, self.batch = root, batch
        root.mkdir(parents=True, exist_ok=True)
        self.addresses = [f"127.0.0.1:{port}" for port in free_ports(3)]
        self.procs: dict[int, subprocess.Popen] = {}
        self._lock = threading.Lock()

    def start(self, index: int) -> None:
        partners = ",".join(a for i, a in enumerate(self.addresses) if i != index)
        command = [sys.executable, str(PEER), "--self", self.addresses[index], "--partners", partners,
                   "--journal", str(self.root / f"node-{index}.journal"), *(["--batch"] if self.batch else [])]
        log = open(self.root / f"node-{index}.log", "ab")  # the child owns it
        try:
            self.procs[index] = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=log, text=True, bufsize=1)
        finally:
            log.close()

    def start_all(self) -> None:
        for index in range(3):
            self.start(index)
        self.wait_ready(60)

    def send(self, index: int, op: str, **args: object) -> None:
        proc = self.procs[index]
        proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        proc.stdin.flush()

    def receive(self, index: int) -> dict:
        line = self.procs[index].stdout.readline()
        if not line:
            raise PeerError(f"PySyncObj node {index} exited (see {self.root}/node-{index}.log)")
        return json.loads(line)

    def call(self, index: int, op: str, **args: object) -> dict:
        self.send(index, op, **args)
        return self.receive(index)

    def wait_ready(self, timeout_s: float) -> int:
        """Every running node ready and agreeing on one leader; returns the leader's index."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            states = [self.call(i, "status") for i in self.procs if self.procs[i].poll() is None]
            leaders = {s["leader"] for s in states}
            if len(states) == 3 and all(s["ready"] for s in states) and len(leaders) == 1 and None not in leaders:
                return self.addresses.index(leaders.pop())
            time.sleep(0.1)
        raise PeerError(f"PySyncObj cluster not ready within {timeout_s:.0f} s")

    def pids(self) -> dict[int, int]:
        return {i: p.pid for i, p in self.procs.items() if p.poll() is None}

    def kill(self, index: int) -> None:
        os.kill(self.procs[index].pid, signal.SIGKILL)
        self.procs[index].wait(timeout=30)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.stdin.close()  # end of input: the peer's loop ends and it exits
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def throughput(cluster: PeerCluster, count: int, inflight: int) -> dict:
    leader = cluster.wait_ready(60)
    pids = cluster.pids()
    cpu_before = {i: cpu_seconds(p) for i, p in pids.items()}
    cluster.send(leader, "throughput", count=count, inflight=inflight)
    time.sleep(1.0)  # well inside the run (several seconds at PySyncObj's rates)
    loaded = {i: rss_kib(p) for i, p in pids.items()}
    answer = cluster.receive(leader)
    cpu = {i: cpu_seconds(p) - cpu_before[i] for i, p in pids.items()}
    return {**answer, "loaded_rss_kib": loaded, "server_cpu_s": cpu, "leader": leader}


def latency(cluster: PeerCluster, count: int) -> list[float]:
    leader = cluster.wait_ready(60)
    cluster.call(leader, "latency", count=20)  # warm-up, as on the pykraft side
    return cluster.call(leader, "latency", count=count)["latencies_ms"]


def failover_once(cluster: PeerCluster, window_s: float) -> float:
    leader = cluster.wait_ready(120)
    follower = next(i for i in range(3) if i != leader)
    cluster.call(follower, "ticker_start")
    time.sleep(1.0)
    killed_at = time.time()
    cluster.kill(leader)
    # The peer hands out commit times only when its ticker stops (a restart would leave a gap in the writer), so
    # wait a fixed window and stop once; a failover slower than the window counts as infinite.
    time.sleep(window_s)
    times = cluster.call(follower, "ticker_stop")["commit_times"]
    first = next((t for t in times if t > killed_at), None)
    cluster.start(leader)
    cluster.wait_ready(120)
    return float("inf") if first is None else first - killed_at


def failover(cluster: PeerCluster, runs: int, window_s: float = 8) -> list[float]:
    return [failover_once(cluster, window_s) for _ in range(runs)]
