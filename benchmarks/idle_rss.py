"""Idle RSS of each kind of node: a controller-only node, a broker-only node, and a combined node
(`process.roles=broker,controller`), each measured as benchmarks/quorum.py measures its voters: VmRSS two seconds
after the node serves (here: once the broker is unfenced and a topic exists, so the broker's data plane has started).

Run: .venv/bin/python benchmarks/idle_rss.py [--dir DIR] [--rounds N]

Then the cost of an idle client connection: the broker's VmRSS before and after CONNECTIONS connections that each
sent one ApiVersions request, read its answer and stay open (what a fleet of idle consumers and producers holds).

Prints one line per round and a JSON line with the largest of each kind (issue 34's goal: <= 32 MiB per node) and
the largest per-connection cost. No thresholds: the numbers are for people.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from quorum_pykraft import rss_kib  # benchmarks/ is on the path as the script's folder

from pykraft.node.local_cluster import CLI, LocalCluster, free_ports

SETTLE_S = 2.0
CONNECTIONS = 500


def _topic(port: int) -> None:
    from e2e.helpers import wait_for

    def created() -> bool:
        return subprocess.run([*CLI, "topics", "create", "--bootstrap-server", f"127.0.0.1:{port}", "--topic", "idle",
                               "--partitions", "1", "--replication-factor", "1"], capture_output=True,
                              timeout=120).returncode == 0

    wait_for(created, "a topic created")


def split_nodes(root: Path) -> tuple[int, int, float]:
    """(controller KiB, broker KiB, KiB per idle client connection to the broker) of a one-controller, one-broker
    cluster."""
    cluster = LocalCluster(root, controllers=1, brokers=1)
    cluster.format_all()
    cluster.start_all()
    try:
        broker = cluster.nodes[cluster.broker_ids[0]]
        _topic(broker.port)
        time.sleep(SETTLE_S)
        idle = (rss_kib(cluster.nodes[cluster.controller_ids[0]].process.pid), rss_kib(broker.process.pid))
        return (*idle, _per_connection_kib(broker.address, broker.process.pid, idle[1]))
    finally:
        cluster.stop_all(timeout=20)


def _per_connection_kib(address: tuple[str, int], pid: int, idle_kib: int) -> float:
    body = struct.pack(">hhih", 18, 0, 1, len(b"idle")) + b"idle"  # ApiVersions v0, correlation id 1
    request = struct.pack(">i", len(body)) + body
    connections = [socket.create_connection(address) for _ in range(CONNECTIONS)]
    try:
        for connection in connections:
            connection.sendall(request)
        for connection in connections:
            connection.recv(1 << 16)
        time.sleep(SETTLE_S)
        return (rss_kib(pid) - idle_kib) / CONNECTIONS
    finally:
        for connection in connections:
            connection.close()


def combined_node(root: Path) -> int:
    broker_port, controller_port = free_ports(2)
    root.mkdir(parents=True)
    config = root / "server.properties"
    config.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER", "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}", f"log.dirs={root / 'data'}",
        "offsets.topic.replication.factor=1", ""]))
    cluster_id = subprocess.run([*CLI, "storage", "random-uuid"], capture_output=True, text=True,
                                check=True).stdout.strip()
    subprocess.run([*CLI, "storage", "format", "--config", str(config), "--cluster-id", cluster_id, "--standalone"],
                   capture_output=True, check=True)
    with open(root / "server.log", "ab") as log:
        process = subprocess.Popen([*CLI, "server", "start", "--config", str(config)], stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _topic(broker_port)
        time.sleep(SETTLE_S)
        return rss_kib(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    worst = {"controller": 0, "broker": 0, "combined": 0}
    worst_connection = 0.0
    for index in range(args.rounds):
        root = Path(tempfile.mkdtemp(prefix="idle-rss-", dir=args.dir))
        try:
            controller, broker, per_connection = split_nodes(root / "split")
            combined = combined_node(root / "combined")
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"round {index + 1}: controller {controller / 1024:.1f} MiB, broker {broker / 1024:.1f} MiB, "
              f"combined {combined / 1024:.1f} MiB; {CONNECTIONS} idle client connections add "
              f"{per_connection:.1f} KiB each to the broker", flush=True)
        for kind, kib in (("controller", controller), ("broker", broker), ("combined", combined)):
            worst[kind] = max(worst[kind], kib)
        worst_connection = max(worst_connection, per_connection)
    print(json.dumps({**{f"idle_rss_mib_{kind}": round(kib / 1024, 1) for kind, kib in worst.items()},
                      "idle_connection_kib": round(worst_connection, 1)}))


if __name__ == "__main__":
    main()
