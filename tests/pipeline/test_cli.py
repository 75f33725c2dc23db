"""`pykraft analyze` exit code 2 cases, each one line on stderr (no Spark session is started for them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .cluster_files import make_cluster


def _analyze(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_no_log_found_exits_2_with_one_line(tmp_path):
    result = _analyze(str(tmp_path), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"pykraft analyze: no Kafka log segment found under {tmp_path}"]


def test_missing_directory_exits_2(tmp_path):
    result = _analyze(str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no such directory" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_no_java_exits_2_with_one_line(tmp_path):
    make_cluster(tmp_path / "c", "NoJavaClusterAAAAAAAAAA", nodes=(1,))
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = os.path.dirname(sys.executable)  # the venv only: no java on it
    result = _analyze(str(tmp_path / "c"), "--out", str(tmp_path / "out"), env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "pykraft analyze: Java not found: Spark needs a Java 17+ runtime (`java` on PATH or JAVA_HOME)"]


@pytest.mark.parametrize("flags", [["--at-offset", "3", "--at-time", "2026-01-01T00:00:00Z"],
                                   ["--at-time", "yesterday"]])
def test_bad_flags_exit_2(tmp_path, flags):
    make_cluster(tmp_path / "c", "FlagsClusterAAAAAAAAAAA", nodes=(1,))
    result = _analyze(str(tmp_path / "c"), "--out", str(tmp_path / "out"), *flags)
    assert result.returncode == 2
