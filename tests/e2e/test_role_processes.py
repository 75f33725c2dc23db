"""Roles are enforced, with real processes: a copy of a combined node's data started with process.roles=broker
holds a log whose voter set names it the only voter, yet it never votes, campaigns or leads (it used to become the
raft leader of that log at once); it says so in one line, and its client listener never opens (it cannot catch up
without a controller). The original combined node, started again afterwards, leads its log as before."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from pykraft.node.local_cluster import CLI, free_ports
from pykraft.storage.quorum_state import QUORUM_STATE as QUORUM_STATE_FILE

from .helpers import wait_for

WATCH_S = 6.0  # a dozen election timeouts of 500 ms: a sole voter campaigns within the first one
VOTER_LINE = "the metadata log names it a voter of the quorum, but process.roles=broker has no controller role"


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)
    assert not check or result.returncode == 0, result.stderr
    return result


def _start(config: Path) -> subprocess.Popen:
    log = open(config.parent / "server.log", "ab")  # the child owns it
    try:
        return subprocess.Popen([*CLI, "server", "start", "--config", str(config)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    finally:
        log.close()


def _write_config(path: Path, roles: str, listeners: str, data: Path, controller_port: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([
        f"process.roles={roles}", "node.id=1", f"listeners={listeners}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"controller.quorum.bootstrap.servers=127.0.0.1:{controller_port}", f"log.dirs={data}",
        "controller.quorum.election.timeout.ms=500", "controller.quorum.fetch.timeout.ms=1000",
        "controller.quorum.request.timeout.ms=1000", "broker.heartbeat.interval.ms=300", ""]))
    return path


def _unfenced(broker_port: int) -> bool:
    result = _cli("brokers", "list", "--json", "--bootstrap-server", f"127.0.0.1:{broker_port}", check=False)
    return result.returncode == 0 and '"fenced": false' in result.stdout


def _roles_in_trace(data: Path) -> list[str]:
    trace = data / "__cluster_metadata-0" / "pykraft-trace.jsonl"
    if not trace.exists():
        trace = data / "pykraft-trace.jsonl"
    lines = trace.read_text().splitlines() if trace.exists() else []
    return [json.loads(line)["role"] for line in lines if json.loads(line)["event"].startswith("became_")]


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_a_broker_started_on_a_combined_nodes_data_never_votes_or_leads(tmp_path):
    broker_port, controller_port, copy_port = free_ports(3)
    original_data = tmp_path / "combined" / "data"
    combined = _write_config(tmp_path / "combined" / "server.properties", "broker,controller",
                             f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
                             original_data, controller_port)
    _cli("storage", "format", "--config", str(combined), "--cluster-id", _cli("storage", "random-uuid").stdout.strip(),
         "--standalone")
    process = _start(combined)
    try:
        wait_for(lambda: _unfenced(broker_port), "the combined node's broker part unfenced")
        _cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{broker_port}", "--topic", "kept",
             "--partitions", "1", "--replication-factor", "1")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    stored = json.loads((original_data / "__cluster_metadata-0" / QUORUM_STATE_FILE).read_text())
    assert stored["leaderId"] == 1  # the combined node led its log

    copy_data = tmp_path / "copy" / "data"
    shutil.copytree(original_data, copy_data)
    for trace in copy_data.rglob("pykraft-trace.jsonl"):
        trace.unlink()  # the copy's trace holds only what the broker does
    broker = _write_config(tmp_path / "copy" / "server.properties", "broker", f"PLAINTEXT://127.0.0.1:{copy_port}",
                           copy_data, controller_port)
    copy = _start(broker)
    try:
        log = tmp_path / "copy" / "server.log"
        wait_for(lambda: _roles_in_trace(copy_data), "the copy's first state in its trace")
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            assert copy.poll() is None, log.read_text(errors="replace")
            roles = _roles_in_trace(copy_data)
            assert set(roles) <= {"unattached", "follower"}, roles
            time.sleep(0.2)
        assert VOTER_LINE in log.read_text(errors="replace"), "one line says why it only observes"
        after = json.loads((copy_data / "__cluster_metadata-0" / QUORUM_STATE_FILE).read_text())
        assert after["leaderEpoch"] == stored["leaderEpoch"], "no election was started by the copy"
        assert _refused(copy_port), "a broker that never caught up serves no client"
    finally:
        copy.send_signal(signal.SIGTERM)
        copy.wait(timeout=60)

    # The original, untouched by its copy, leads its log again and still has its topic.
    process = _start(combined)
    try:
        wait_for(lambda: _unfenced(broker_port), "the original combined node unfenced again")
        listed = _cli("topics", "list", "--bootstrap-server", f"127.0.0.1:{broker_port}")
        assert listed.stdout.split() == ["kept"]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
