"""Helpers for the multi-process tests: real `pykraft server start` processes on 127.0.0.1, driven through the CLI.

Status comes from `pykraft metadata-quorum describe --status` (parsed back from Kafka's output format), logs are read
with `pykraft dump-log --json`, writes are Produce requests from `MetadataLogWriter` (a client like any other).
Waits are bounded by generous deadlines and never assert durations.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pykraft.admin.writer import MetadataLogWriter, WriteError
from pykraft.admin.errors import AdminClientError
from pykraft.node.local_cluster import LocalCluster, LocalNode

T = TypeVar("T")

# Shorter raft timeouts than Kafka's defaults keep failovers quick; fetch >= 2 x the 500 ms long poll.
FAST_TIMEOUTS = {
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.request.timeout.ms": "1000",
    "pykraft.produce.enable": "true",
}


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 60.0, interval: float = 0.2) -> T:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception as exc:  # a probe may fail while nodes start or fail over
            value, last = None, exc
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last error: {last!r})")


def brokers_serving(cluster: LocalCluster) -> bool:
    """Every running broker takes connections. The controller lists a broker unfenced before the broker opens its
    client listeners (it opens them once it learns so, as Kafka's BrokerServer does), so "unfenced" alone is a race."""
    for node_id in cluster.broker_ids:
        node = cluster.nodes[node_id]
        if not node.is_running():
            continue
        try:
            socket.create_connection(("127.0.0.1", node.port), timeout=1.0).close()
        except OSError:
            return False
    return True


def bootstrap_arg(cluster: LocalCluster, ids: list[int] | None = None) -> str:
    nodes = [cluster.nodes[i] for i in ids] if ids else [n for n in cluster.nodes.values() if n.is_running()]
    return ",".join(f"127.0.0.1:{n.port}" for n in nodes)


def describe_status(cluster: LocalCluster, ids: list[int] | None = None) -> dict[str, object]:
    """`metadata-quorum describe --status`, parsed: LeaderId/LeaderEpoch/HighWatermark as ints, voters and
    observers as lists of dicts."""
    result = cluster.cli("metadata-quorum", "--bootstrap-controller", bootstrap_arg(cluster, ids), "describe",
                         "--status", timeout=60)
    fields: dict[str, object] = {}
    for line in result.stdout.splitlines():
        label, _, value = line.partition(":")
        value = value.strip()
        if label in ("CurrentVoters", "CurrentObservers"):
            fields[label] = json.loads(value)
        elif label in ("LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs"):
            fields[label] = int(value)
        elif label:
            fields[label] = value
    return fields


def voter_ids(status: dict[str, object]) -> list[int]:
    return sorted(v["id"] for v in status["CurrentVoters"])  # type: ignore[union-attr]


def observer_ids(status: dict[str, object]) -> list[int]:
    return sorted(v["id"] for v in status["CurrentObservers"])  # type: ignore[union-attr]


def leader_status(cluster: LocalCluster, ids: list[int] | None = None) -> dict[str, object] | None:
    status = describe_status(cluster, ids)
    return status if status["LeaderId"] >= 0 and status["HighWatermark"] >= 0 else None  # type: ignore[operator]


def write(cluster: LocalCluster, values: list[bytes], batch: int = 50, deadline_ms: int = 30_000) -> list[bytes]:
    """Write `values` in batches; returns the acknowledged ones (a batch whose write failed is not returned)."""
    bootstrap = [n.address for n in cluster.nodes.values() if n.is_running()]

    async def main() -> list[bytes]:
        acked: list[bytes] = []
        async with MetadataLogWriter(bootstrap, deadline_ms=deadline_ms, request_timeout_ms=3000) as writer:
            for start in range(0, len(values), batch):
                chunk = values[start:start + batch]
                try:
                    await writer.write(chunk)
                except (WriteError, AdminClientError):
                    continue
                acked.extend(chunk)
        return acked

    return asyncio.run(main())


def log_values(cluster: LocalCluster, node: LocalNode) -> list[bytes]:
    """Every data record value in a node's metadata log segments (in offset order)."""
    partition = Path(node.data_dir) / "__cluster_metadata-0"
    segments = sorted(str(p) for p in partition.glob("*.log"))
    if not segments:
        return []
    result = cluster.cli("dump-log", "--json", *segments, check=False, timeout=120)
    values = []
    for line in result.stdout.splitlines():
        record = json.loads(line)
        if not record.get("isControl") and record.get("value") is not None:
            values.append(base64.b64decode(record["value"]))
    return values


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]
