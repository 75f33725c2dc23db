"""Issue 12 item 7: a start that is refused changes nothing on disk. The data directory of a node that ran and
stopped is given every kind of damage recovery would repair (stale indexes, a torn tail, leftovers of a snapshot
write, an orphaned index) plus one fault that must refuse the start; every file is checksummed before and after."""

from __future__ import annotations

import asyncio
import hashlib
import signal
import subprocess
from pathlib import Path

import pytest

from pykraft.node.serve import run_server

from .helpers import free_ports
from .test_server_cmd import COMMAND, keep_logging, wait_until_serving, write_config  # noqa: F401 - a fixture

PARTITION = "__cluster_metadata-0"


@pytest.fixture
def stopped_node(tmp_path):
    """A node that served a write and stopped cleanly: (its config path, its data directory)."""
    port = free_ports(1)[0]
    path, data = write_config(tmp_path, port)
    process = subprocess.Popen([*COMMAND, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        asyncio.run(wait_until_serving(port, process))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    return path, data


def add_repairable_damage(partition: Path) -> None:
    """What an open would repair: each is a write a refused start must not make."""
    for index in partition.glob("*.index"):
        index.write_bytes(b"\x00\x00\x00\x07\x00\x00\x00\x00")
    for index in partition.glob("*.timeindex"):
        index.write_bytes(b"\x00" * 11 + b"\x07")
    last_segment = sorted(partition.glob("*.log"))[-1]
    with open(last_segment, "ab") as f:
        f.write(b"\x00" * 40)  # a torn tail
    (partition / "00000000000000000000-0000000000-0123456789abcdef.checkpoint.part").write_bytes(b"partial")
    (partition / "00000000000000999999.index").write_bytes(b"")  # an orphan


def checksums(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def refused(path: Path, data: Path, capsys) -> str:
    before = checksums(data)
    assert run_server(path) == 1
    assert checksums(data) == before, "a refused start changed the data directory"
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_damaged_quorum_state_copies_refuse_the_start_without_touching_a_file(stopped_node, capsys, keep_logging):
    path, data = stopped_node
    partition = data / PARTITION
    add_repairable_damage(partition)
    (partition / "quorum-state").write_text("{not json")
    (partition / "quorum-state.backup").write_text("{\"leaderEpoch\":1}\ncrc32c:00000000\n")
    line = refused(path, data, capsys)
    assert line.startswith("pykraft server: both copies of the quorum state are unusable")


def test_a_corrupt_latest_snapshot_refuses_the_start_without_touching_a_file(stopped_node, capsys, keep_logging):
    path, data = stopped_node
    partition = data / PARTITION
    add_repairable_damage(partition)
    (partition / "00000000000000000001-0000000001.checkpoint").write_bytes(b"\x00" * 8 + b"\xff" * 80)
    line = refused(path, data, capsys)
    assert line.startswith("pykraft server: ") and "checkpoint" in line


def test_a_listener_port_in_use_refuses_the_start_without_touching_a_file(stopped_node, capsys, keep_logging):
    import socket

    path, data = stopped_node
    add_repairable_damage(data / PARTITION)
    port = int(next(line for line in path.read_text().splitlines() if line.startswith("listeners=")).rsplit(":", 1)[1])
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        line = refused(path, data, capsys)
    assert "cannot listen on 127.0.0.1" in line and "in use" in line


def test_the_same_damage_without_a_refusal_is_repaired(stopped_node, capsys, keep_logging):
    """The control: the damage above is real work for recovery (so the tests above would see a change)."""
    from pykraft.storage import open_file_log

    _, data = stopped_node
    partition = data / PARTITION
    add_repairable_damage(partition)
    before = checksums(data)
    log, report = open_file_log(str(data))
    log.close()
    assert report.torn_tail is not None and report.rebuilt_indexes and report.removed_files
    assert checksums(data) != before
