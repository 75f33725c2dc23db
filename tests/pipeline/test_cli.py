"""`pykraft analyze` exit code 2 cases, each one line on stderr (no Spark session is started for them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .cluster_files import make_cluster


def _analyze(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", *args], capture_output=True,
                          text=True, timeout=900, env=env)


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
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("pykraft analyze: ")


def _python_without_pykraft(where) -> str:
    """A Python that has the venv's libraries (pyspark, pyarrow, pandas) but not pykraft: a bare venv whose .pth
    adds the venv's site-packages as a plain path, so the editable install's own .pth there is never run."""
    import site
    import venv

    venv.EnvBuilder(with_pip=False).create(where)
    python = os.path.join(where, "bin", "python")
    target = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(target, "venv-libraries.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    probe = subprocess.run([python, "-c", "import pyspark, pyarrow\nimport pykraft"], capture_output=True, text=True,
                           cwd=where)
    assert "No module named 'pykraft'" in probe.stderr  # pyspark and pyarrow import, pykraft does not
    return python


@pytest.mark.spark
def test_executors_without_pykraft_exit_2_with_one_line(tmp_path):
    make_cluster(tmp_path / "c", "NoPykraftClusterAAAAAAA", nodes=(1,))
    env = dict(os.environ, PYSPARK_PYTHON=_python_without_pykraft(str(tmp_path / "bare")))
    result = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", str(tmp_path / "c"), "--out",
                             str(tmp_path / "out")], capture_output=True, text=True, timeout=900, env=env,
                            cwd=str(tmp_path))
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "pykraft analyze: the Spark executors cannot import pykraft: install it in the executors' Python (same "
        "venv, spark.pyspark.python) or ship it with --py-files")
    assert "Traceback" not in result.stderr


@pytest.mark.spark
def test_an_offset_before_what_the_directories_hold_exits_2_with_one_line(tmp_path):
    """Every node's log starts after a snapshot: an image before it cannot be built (it used to be an empty image
    with every audit passing)."""
    from .test_cluster_pass import _start_logs_at_snapshot

    data = make_cluster(tmp_path / "c", "EarlyOffsetClusterAAAAA")
    end = int(next((data[0] / "__cluster_metadata-0").glob("*-*.checkpoint")).name.split("-")[0])
    for d in data:
        _start_logs_at_snapshot(d, end)
    result = _analyze(str(tmp_path / "c"), "--out", str(tmp_path / "out"), "--at-offset", "2")
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("pykraft analyze: --at-offset 2 is before what the directories still hold")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
