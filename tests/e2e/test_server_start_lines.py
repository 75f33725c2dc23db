"""`pykraft server start` as Kafka's kafka-server-start.sh takes it (the properties file as its argument), and what
it says when it cannot start: every problem of the file on a line of its own, a taken listener or metrics port
named with its setting, one line each and exit status 1."""

from __future__ import annotations

import signal
import socket
import subprocess

import pytest

from pykraft.node.local_cluster import CLI, LocalCluster, free_ports

from .helpers import describe_status, wait_for


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("start") / "cluster", controllers=1)
    cluster.format_all()
    return cluster, cluster.nodes[1]


def start(config) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "server", "start", str(config)], capture_output=True, text=True, timeout=120)


def test_the_positional_form_starts_the_node(node):
    cluster, local = node
    process = subprocess.Popen([*CLI, "server", "start", str(local.config_path)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: describe_status(cluster, [1])["LeaderId"] == 1, "the node leading its quorum")
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err


def test_every_problem_of_the_file_on_a_line_of_its_own(node, tmp_path):
    _, local = node
    bad = tmp_path / "bad.properties"
    bad.write_text(local.config_path.read_text().replace("node.id=1", "node.id=one")
                   + "metadata.log.segment.bytes=1000\n")
    done = start(bad)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) >= 2
    assert all(line.startswith("pykraft server: ") for line in lines)
    assert any("node.id" in line for line in lines)
    assert any("Invalid value 1000 for configuration metadata.log.segment.bytes" in line for line in lines)


def test_a_taken_listener_port_is_named(node):
    _, local = node
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", local.port))
        holder.listen()
        done = start(local.config_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (f"pykraft server: cannot listen on 127.0.0.1:{local.port} (listener "
                                            f"CONTROLLER): address already in use")


def test_a_taken_metrics_port_is_named(node, tmp_path):
    _, local = node
    (port,) = free_ports(1)
    config = tmp_path / "metrics.properties"
    config.write_text(local.config_path.read_text() + f"pykraft.metrics.port={port}\n")
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", port))
        holder.listen()
        done = start(config)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (f"pykraft server: cannot serve metrics on port {port} "
                                            f"(pykraft.metrics.port): address already in use")
