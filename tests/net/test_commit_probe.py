"""net/commit_probe.py: off unless PYKRAFT_COMMIT_PROBE is set; when set, every stamp reaches `<prefix>.<pid>`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pykraft.net.commit_probe import ENV, CommitProbe

_SHOW = "from pykraft.net import commit_probe as p; print(p.PROBE is None, p.PROBE and p.PROBE.path)"


def _probe_in_child(env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if k != ENV}
    return subprocess.run([sys.executable, "-c", _SHOW], env={**clean, **env}, check=True, capture_output=True,
                          text=True).stdout.split()[0]


def test_off_by_default() -> None:
    assert _probe_in_child({}) == "True"


def test_on_when_the_environment_names_a_prefix(tmp_path: Path) -> None:
    assert _probe_in_child({ENV: str(tmp_path / "probe")}) == "False"


def test_stamps_are_written_in_order_with_offset_and_peer(tmp_path: Path) -> None:
    probe = CommitProbe(str(tmp_path / "probe"))
    probe.stamp("appended", 7)
    probe.stamp("fetch_in", 8, 2)
    probe.write()
    probe.stamp("hwm", 8)
    probe.write()
    rows = [line.split("\t") for line in Path(probe.path).read_text().splitlines()]
    assert probe.path == f"{tmp_path / 'probe'}.{os.getpid()}"
    assert [(event, offset, peer) for _, event, offset, peer in rows] == [
        ("appended", "7", "-1"), ("fetch_in", "8", "2"), ("hwm", "8", "-1")]
    times = [int(t) for t, *_ in rows]
    assert times == sorted(times)


def test_an_unwritable_file_stops_the_probe_without_failing(tmp_path: Path) -> None:
    probe = CommitProbe(str(tmp_path / "missing-dir" / "probe"))
    probe.stamp("appended", 1)
    probe.write()  # no exception: diagnostics never fail the node
    probe.stamp("appended", 2)
    probe.write()
    assert not (tmp_path / "missing-dir").exists()
