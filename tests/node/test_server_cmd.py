"""`pykraft server start` as a real process: refusals with one line and exit 1, SIGTERM exits 0, and SIGKILL in
the middle of writes loses no acknowledged record."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys

import pytest

from pykraft.net.errors import NetError
from pykraft.node.serve import run_server
from pykraft.protocol.errors import ErrorCode
from pykraft.records import iter_batches
from pykraft.storage import open_file_log

from .helpers import call, config_text, format_dir, free_ports, produce_request

COMMAND = [sys.executable, "-m", "pykraft.cli.main", "server", "start", "--config"]


def write_config(tmp_path, port: int, *, formatted: bool = True, node_id: int = 1):
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    if formatted:
        format_dir(data, 1)
    path = tmp_path / "server.properties"
    path.write_text(config_text(node_id, {node_id: port}, data))
    return path, data


def run_to_exit(path) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, str(path)], capture_output=True, text=True, timeout=60)


def test_unformatted_storage_is_one_line_and_exit_1(tmp_path):
    path, data = write_config(tmp_path, free_ports(1)[0], formatted=False)
    result = run_to_exit(path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pykraft server: No `meta.properties` found in")


@pytest.fixture
def keep_logging():
    """run_server installs its log handler on the root logger; give pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers, root.level = handlers, level


def test_a_directory_of_another_node_is_refused(tmp_path, capsys, keep_logging):
    port = free_ports(1)[0]
    path, data = write_config(tmp_path, port)
    path.write_text(config_text(2, {2: port}, data))  # the directory says node 1
    assert run_server(path) == 1  # in-process: the same code path as the command, without the start-up cost
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("pykraft server: Stored node id 1 doesn't match previous node id 2")
    assert run_server(path) == 1  # the refusal released the directory lock: the same answer, not "in use"
    assert "doesn't match" in capsys.readouterr().err


def test_config_errors_are_one_line_each_and_exit_1(tmp_path, capsys):
    path = tmp_path / "bad.properties"
    path.write_text("process.roles=controller\nnode.id=x\n")  # node.id, no controller listener, no quorum
    assert run_server(path) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("pykraft server: ") for line in lines)
    assert len(lines) == 3, lines
    assert "Invalid value x for configuration node.id" in lines[0]
    assert "controller.listener.names" in lines[1] and "controller.quorum.voters" in lines[2]


async def wait_until_serving(port: int, process: subprocess.Popen) -> None:
    for _ in range(500):
        assert process.poll() is None, process.stderr.read() if process.stderr else "exited"
        try:
            answer = await call(port, produce_request([b"probe"]), timeout_ms=2000)
            if answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE:
                return
        except NetError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("the server never accepted a write")


async def write_until_killed(port: int, process: subprocess.Popen, acked: dict[int, bytes]) -> None:
    """Write one record at a time; kill the process with SIGKILL while writes are in flight."""

    async def writer(lane: int) -> None:
        n = 0
        while True:
            value = f"lane{lane}-{n}".encode()
            n += 1
            try:
                answer = await call(port, produce_request([value]), timeout_ms=2000)
            except NetError:
                return
            partition = answer.responses[0].partition_responses[0]
            if partition.error_code == ErrorCode.NONE:
                acked[partition.base_offset] = value

    writers = [asyncio.ensure_future(writer(lane)) for lane in range(4)]
    while len(acked) < 40:
        await asyncio.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    await asyncio.gather(*writers)


def committed_values(data) -> dict[int, bytes]:
    log, _ = open_file_log(str(data))
    try:
        found = {}
        for batch in iter_batches(log.read(log.start_offset(), 1 << 30).records):
            if not batch.is_control:
                for record in batch.records():
                    found[record.offset] = bytes(record.value)
        return found
    finally:
        log.close()


@pytest.mark.asyncio
async def test_sigkill_under_writes_loses_no_acknowledged_record(tmp_path):
    port = free_ports(1)[0]
    path, data = write_config(tmp_path, port)
    first = subprocess.Popen([*COMMAND, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    acked: dict[int, bytes] = {}
    try:
        await wait_until_serving(port, first)
        await write_until_killed(port, first, acked)
    finally:
        if first.poll() is None:
            first.kill()
        first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    second = subprocess.Popen([*COMMAND, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        await wait_until_serving(port, second)  # a new write commits: the restarted leader's epoch committed
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(timeout=30)
    found = committed_values(data)
    missing = {offset: value for offset, value in acked.items() if found.get(offset) != value}
    assert not missing, f"acknowledged records lost: {missing}"
    trace = (data / "pykraft-trace.jsonl").read_text()
    assert trace.count('"event":"recovered"') == 2 and '"event":"stopped"' in trace
