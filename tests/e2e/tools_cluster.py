"""Helpers of the operator-tool tests: a cluster started through the CLI, shared by the tests of a module, and
`pykraft` command lines run as an operator types them (stdin, stdout, stderr, exit status)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pykraft.node.local_cluster import CLI, LocalCluster

from .data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from .helpers import wait_for

# Groups rebalance at once (no initial delay), __consumer_offsets is small, and leaders stay where elections put
# them (no automatic preferred-leader balancing), so the tools' effects are exactly the tests' own.
TOOLS_PROPERTIES = {**DATA_PLANE_TIMING, "offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0",
                    "auto.leader.rebalance.enable": "false"}


def pykraft(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def unfenced(cluster: LocalCluster) -> list[int]:
    listed = pykraft("brokers", "list", "--bootstrap-controller", controllers(cluster), "--json")
    return [] if listed.returncode else [b["id"] for b in json.loads(listed.stdout) if not b["fenced"]]


def brokers(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)


def controllers(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[c].port}" for c in cluster.controller_ids)


def start_tools_cluster(root: Path, controller_count: int = 1, broker_count: int = 3) -> LocalCluster:
    cluster = LocalCluster(root, controllers=controller_count, brokers=broker_count, properties=TOOLS_PROPERTIES)
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: len(unfenced(cluster)) == broker_count, "every broker unfenced", timeout=120)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def create_topic(cluster: LocalCluster, topic: str, partitions: int, replication: int = 3) -> None:
    done = pykraft("topics", "--create", "--bootstrap-server", brokers(cluster), "--topic", topic, "--partitions",
                   str(partitions), "--replication-factor", str(replication))
    assert done.returncode == 0, done.stderr

    def described() -> bool:
        listed = pykraft("topics", "--describe", "--bootstrap-server", brokers(cluster), "--topic", topic)
        lines = [l for l in listed.stdout.splitlines() if l.startswith("\tTopic:")]
        return len(lines) == partitions and all("Leader: none" not in l for l in lines)

    wait_for(described, f"{topic}'s partitions with leaders")


def offsets(cluster: LocalCluster, topic: str, time: str = "latest") -> dict[int, int]:
    """`get-offsets` parsed: partition -> offset."""
    done = pykraft("get-offsets", "--bootstrap-server", brokers(cluster), "--topic", topic, "--time", time)
    assert done.returncode == 0, done.stderr
    return {int(p): int(o) for _, p, o in (line.rsplit(":", 2) for line in done.stdout.splitlines())}


def table(stdout: str, header: str) -> list[dict[str, str]]:
    """A Kafka tool's table (a header line of upper-case names, whitespace-separated cells) as dicts."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = lines[start].split()
    rows = []
    for line in lines[start + 1:]:
        if line.startswith(header):
            continue
        rows.append(dict(zip(names, line.split())))
    return rows


__all__ = ["TOOLS_PROPERTIES", "brokers", "controllers", "create_topic", "offsets", "pykraft", "start_tools_cluster",
           "stop_cluster", "table", "unfenced"]
