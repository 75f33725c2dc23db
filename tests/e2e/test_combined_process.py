"""`process.roles=broker,controller` in one process, Kafka's single-node quickstart layout, driven through the CLI:
the node formats with --standalone, registers its broker part with its own controller, creates and describes a topic
through the broker listener, keeps it across a restart, serves a consumer group, and stops cleanly after its
controlled shutdown."""

from __future__ import annotations

import signal
import subprocess
import urllib.request

from pykraft.node.local_cluster import CLI, free_ports

from .helpers import wait_for
from .stock_clients import consume_group, produce


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)
    assert not check or result.returncode == 0, result.stderr
    return result


def _start(config) -> subprocess.Popen:  # Path
    log = open(config.parent / "server.log", "ab")  # the child owns it
    try:
        return subprocess.Popen([*CLI, "server", "start", "--config", str(config)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log.close()


def _described(bootstrap: str) -> list[str]:
    return _cli("topics", "describe", "--bootstrap-server", bootstrap, "--topic", "demo", check=False).stdout.splitlines()


def _unfenced(broker_port: int) -> bool:
    result = _cli("brokers", "list", "--json", "--bootstrap-server", f"127.0.0.1:{broker_port}", check=False)
    return result.returncode == 0 and '"fenced": false' in result.stdout


def test_a_combined_node_serves_as_controller_and_broker_and_keeps_its_topic_across_a_restart(tmp_path):
    broker_port, controller_port, metrics_port = free_ports(3)
    config = tmp_path / "server.properties"
    config.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}",
        f"log.dirs={tmp_path / 'data'}", f"pykraft.metrics.port={metrics_port}",
        "offsets.topic.replication.factor=1", ""]))  # as Kafka's single-node server.properties sets it
    cluster_id = _cli("storage", "random-uuid").stdout.strip()
    _cli("storage", "format", "--config", str(config), "--cluster-id", cluster_id, "--standalone")
    bootstrap = f"127.0.0.1:{broker_port}"
    process = _start(config)
    try:
        wait_for(lambda: _unfenced(broker_port), "the broker part registered and unfenced")
        created = _cli("topics", "create", "--bootstrap-server", bootstrap, "--topic", "demo", "--partitions", "3",
                       "--replication-factor", "1")
        assert created.stdout.strip() == "Created topic demo."
        # The reassignment APIs reach the node's own controller through its broker listener.
        listed = _cli("reassign-partitions", "--bootstrap-server", bootstrap, "--list")
        assert listed.stdout.strip() == "No partition reassignments found."
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert "controlled shutdown done" in (tmp_path / "server.log").read_text()

        process = _start(config)
        wait_for(lambda: _unfenced(broker_port), "the broker part unfenced again after the restart")
        # The controlled shutdown left the partitions leaderless (no other broker; the ISR keeps broker 1); its
        # unfencing after the restart elects it again, in records that follow the unfencing one.
        lines = wait_for(lambda: (found := _described(bootstrap)) and all(
            "\tLeader: 1\tReplicas: 1\tIsr: 1\t" in line for line in found[1:]) and found,
            "the topic led by broker 1 again after the restart")
        assert lines[0].startswith("Topic: demo\tTopicId: ") and len(lines) == 4
        status = _cli("metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{controller_port}", "describe",
                      "--status").stdout
        assert "LeaderId:               1" in status
        # Both parts publish their metrics on the node's endpoint.
        scraped = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert "kafka_controller_kafkacontroller_activecontrollercount 1.0" in scraped
        assert 'pykraft_broker_state{state="running"} 1.0' in scraped
        assert "kafka_controller_kafkacontroller_globaltopiccount 1.0" in scraped
        # A consumer group on the broker listener: the combined node is its group coordinator too.
        produced = produce("kafka-python", bootstrap, "demo", 20, lambda i: None)
        assert produced == set(range(20))
        assert sorted(consume_group("kafka-python", bootstrap, "demo", "combined-group", 20)) == list(range(20))
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
