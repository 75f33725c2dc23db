"""A cluster of real `pykraft server start` processes on 127.0.0.1, driven only through the CLI.

Used by `pykraft quickstart`, the multi-process tests and the quorum benchmark. Each node gets a directory
`<root>/node-<id>/` holding its `server.properties`, its metadata log directory `data/` and its stdout/stderr in
`server.log`. Ports are chosen by binding ephemeral sockets first, because the initial voters' endpoints must be
known before any node is formatted.

Nothing here talks Kafka's protocol: status and writes go through `pykraft.admin`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.meta_properties import read_meta_properties

CLI = (sys.executable, "-m", "pykraft.cli.main")
LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"


class LocalClusterError(Exception):
    """A CLI step failed; the message carries the command's stderr."""


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out now (they may be taken again before use; rare on a test machine)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class LocalNode:
    node_id: int
    port: int
    directory: Path
    directory_id: uuid.UUID | None  # None: a format that wrote none (uuid_to_kafka_str gives the zero uuid)
    initial_voter: bool
    extra: dict[str, str] = field(default_factory=dict)
    is_broker: bool = False  # process.roles=broker (else controller)
    process: subprocess.Popen | None = None

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    @property
    def voter_spec(self) -> str:
        """`id@host:port:directoryId`, as --initial-controllers and reassign --target-voters take it."""
        return f"{self.node_id}@127.0.0.1:{self.port}:{uuid_to_kafka_str(self.directory_id)}"

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class LocalCluster:
    """`controllers` initial voters (ids 1..n), `observers` controllers that start as observers (the next ids)
    and `brokers` broker processes (the ids after those)."""

    root: Path
    controllers: int = 3
    observers: int = 0
    brokers: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)  # extra keys for every node
    cluster_id: str = field(default_factory=lambda: uuid_to_kafka_str(uuid.uuid4()))
    nodes: dict[int, LocalNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        ports = free_ports(self.controllers + self.observers + self.brokers)
        for index, port in enumerate(ports):
            node_id = index + 1
            self.nodes[node_id] = LocalNode(node_id, port, self.root / f"node-{node_id}", uuid.uuid4(),
                                            initial_voter=index < self.controllers,
                                            is_broker=index >= self.controllers + self.observers)

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes.values() if n.is_broker]

    @property
    def controller_ids(self) -> list[int]:
        return [n.node_id for n in self.nodes.values() if not n.is_broker]

    # ---- configuration and formatting ------------------------------------------------------------------------
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values() if n.initial_voter)

    def config_text(self, node: LocalNode) -> str:
        listener = BROKER_LISTENER if node.is_broker else LISTENER
        keys = {
            "process.roles": "broker" if node.is_broker else "controller",
            "node.id": str(node.node_id),
            "listeners": f"{listener}://127.0.0.1:{node.port}",
            "advertised.listeners": f"{listener}://127.0.0.1:{node.port}",
            "controller.listener.names": LISTENER,
            "listener.security.protocol.map": f"{LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
            "log.dirs": str(node.data_dir),
            "metadata.log.dir": str(node.data_dir),
            "controller.quorum.bootstrap.servers": self.bootstrap_servers(),
            **self.properties,
            **node.extra,
        }
        return "".join(f"{key}={value}\n" for key, value in keys.items())

    def write_config(self, node: LocalNode) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        node.config_path.write_text(self.config_text(node))

    def format(self, node: LocalNode, *flags: str) -> None:
        """`pykraft storage format` for one node; voters get --initial-controllers, other controllers
        --no-initial-controllers, brokers no quorum flag, unless `flags` says otherwise."""
        self.write_config(node)
        if not flags and not node.is_broker:
            initial = ",".join(n.voter_spec for n in self.nodes.values() if n.initial_voter)
            flags = ("--initial-controllers", initial) if node.initial_voter else ("--no-initial-controllers",)
        self.cli("storage", "format", "--config", str(node.config_path), "--cluster-id", self.cluster_id, *flags)
        # Only --initial-controllers uses the directory id we chose; otherwise format drew a fresh one.
        node.directory_id = read_meta_properties(str(node.data_dir)).directory_id

    def format_all(self) -> None:
        for node in self.nodes.values():
            self.format(node)

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        result = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise LocalClusterError(f"pykraft {' '.join(args[:2])} failed ({result.returncode}): "
                                    f"{result.stderr.strip() or result.stdout.strip()}")
        return result

    # ---- processes ------------------------------------------------------------------------------------------
    def start(self, node_id: int) -> LocalNode:
        node = self.nodes[node_id]
        if node.is_running():
            return node
        log = open(node.log_path, "ab")  # the child owns it for its lifetime
        try:
            node.process = subprocess.Popen([*CLI, "server", "start", "--config", str(node.config_path)],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        finally:
            log.close()
        return node

    def start_all(self, ids: Iterable[int] | None = None) -> None:
        for node_id in ids if ids is not None else self.nodes:
            self.start(node_id)

    def signal(self, node_id: int, signum: int) -> None:
        node = self.nodes[node_id]
        if node.process is not None and node.is_running():
            node.process.send_signal(signum)

    def kill(self, node_id: int) -> None:
        """SIGKILL: the node gets no chance to flush or resign."""
        node = self.nodes[node_id]
        if node.process is not None and node.is_running():
            node.process.kill()
            node.process.wait(timeout=30)

    def stop(self, node_id: int, timeout: float = 30) -> int | None:
        """SIGTERM (graceful resignation), then SIGKILL if it does not exit in time. Returns the exit code."""
        node = self.nodes[node_id]
        if node.process is None:
            return None
        if node.process.poll() is None:
            node.process.send_signal(signal.SIGTERM)
            try:
                node.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(timeout=30)
        return node.process.returncode

    def stop_all(self, timeout: float = 30) -> dict[int, int | None]:
        """SIGTERM to every node, brokers first: a broker's controlled shutdown needs the controllers up."""
        self._stop_group([n for n in self.nodes.values() if n.is_broker and n.is_running()], timeout)
        self._stop_group([n for n in self.nodes.values() if not n.is_broker and n.is_running()], timeout)
        return {n.node_id: (n.process.returncode if n.process else None) for n in self.nodes.values()}

    @staticmethod
    def _stop_group(running: list[LocalNode], timeout: float) -> None:
        processes = [node.process for node in running if node.process is not None]
        for process in processes:
            process.send_signal(signal.SIGCONT)  # a paused node cannot handle SIGTERM
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in processes:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)

    def add_node(self, *, initial_voter: bool = False, extra: Mapping[str, str] | None = None) -> LocalNode:
        """A new controller (not yet formatted or started) with the next free id."""
        node_id = max(self.nodes) + 1
        node = LocalNode(node_id, free_ports(1)[0], self.root / f"node-{node_id}", uuid.uuid4(),
                         initial_voter=initial_voter, extra=dict(extra or {}))
        self.nodes[node_id] = node
        return node

    def server_log(self, node_id: int) -> str:
        path = self.nodes[node_id].log_path
        return path.read_text(errors="replace") if path.exists() else ""
