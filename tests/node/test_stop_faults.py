"""Issue 12 item 5: a node must stop on SIGTERM even when its data directory vanished under it, and a second signal
always ends the process. Real `pykraft server start` processes; waits are generous liveness bounds."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess

import pytest

from pykraft.node import serve

from .test_server_cmd import COMMAND, wait_until_serving, write_config
from .helpers import free_ports

EXIT_BOUND_S = 60  # a liveness bound: before the fix the process never exited


def _start_and_remove_data(tmp_path) -> subprocess.Popen:
    port = free_ports(1)[0]
    path, data = write_config(tmp_path, port)
    process = subprocess.Popen([*COMMAND, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    asyncio.run(wait_until_serving(port, process))
    shutil.rmtree(data)
    return process


def _exit_code(process: subprocess.Popen) -> tuple[int | None, str]:
    try:
        _, stderr = process.communicate(timeout=EXIT_BOUND_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=30)
        return None, ""
    return process.returncode, stderr


def test_sigterm_stops_a_node_whose_data_directory_vanished_with_one_line_and_exit_1(tmp_path):
    process = _start_and_remove_data(tmp_path)
    process.send_signal(signal.SIGTERM)
    code, stderr = _exit_code(process)
    assert code == 1, "the process must end on the first SIGTERM (it stayed up before the fix)"
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("pykraft server: stopped, but final flush and close of the metadata log failed: ")
    assert "No such file or directory" in last


def test_a_second_signal_during_a_failing_stop_still_ends_the_process(tmp_path):
    process = _start_and_remove_data(tmp_path)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGINT)
    code, _ = _exit_code(process)
    assert code is not None and code != 0


class _NeverStops:
    async def run_until_stopped(self) -> None:
        await asyncio.Event().wait()


@pytest.mark.asyncio
async def test_a_stop_still_stuck_after_the_second_signal_gives_up_waiting(monkeypatch):
    monkeypatch.setattr(serve, "FORCED_STOP_S", 0.05)
    forced = asyncio.Event()
    forced.set()
    assert await asyncio.wait_for(serve._stopped_unless_stuck(_NeverStops(), forced), 30) is False
