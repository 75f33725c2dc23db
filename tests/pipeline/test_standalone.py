"""`pykraft analyze --master spark://...` on a standalone Spark cluster started from the pip package (spark-class
Master and Worker on 127.0.0.1, free ports, stopped by PID) writes the same summary.json as local mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pykraft.node.local_cluster import free_ports
from pykraft.pipeline.run import AnalyzeOptions, analyze

from .cluster_files import flip_byte, make_cluster, segment

# Minutes of JVM start-up on 2 cores (6m49s measured at load 11): not in `make test`, run by
# `make standalone-check` (pytest -m standalone).
pytestmark = [pytest.mark.spark, pytest.mark.standalone]
SPARK_CLASS = Path(sys.executable).parent / "spark-class"
READY_TIMEOUT_S = 180


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return int(json.load(response).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.fixture
def standalone(tmp_path):
    port, ui, worker_ui, rest = free_ports(4)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"))
    logs = open(tmp_path / "daemons.log", "w")
    master = subprocess.Popen([str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], env=dict(
                                   env, SPARK_MASTER_OPTS=f"-Dspark.master.rest.port={rest}"),
                              stdout=logs, stderr=subprocess.STDOUT)
    worker = subprocess.Popen([str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                               "--webui-port", str(worker_ui), "--cores", "2", "--memory", "2g", "--work-dir",
                               str(tmp_path / "work"), f"spark://127.0.0.1:{port}"], env=env,
                              stdout=logs, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while _alive_workers(ui) < 1:
            assert master.poll() is None and worker.poll() is None, (tmp_path / "daemons.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the standalone worker never registered"
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for daemon in (worker, master):
            daemon.send_signal(signal.SIGTERM)
        for daemon in (worker, master):
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        logs.close()


def test_standalone_cluster_gives_the_same_summary_as_local_mode(spark, standalone, tmp_path):
    root = tmp_path / "cluster"
    dirs = make_cluster(root, "StandaloneClusterAAAAAA")
    flip_byte(segment(dirs[1]), batch_index=3)  # so that an audit has offending rows to agree on
    local = analyze(spark, AnalyzeOptions([str(root)], str(tmp_path / "local")))
    result = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", str(root), "--out",
                             str(tmp_path / "remote"), "--master", standalone], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 1, result.stderr[-3000:]  # the flipped byte: the replica audit fails
    remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
    assert remote["clusters"] == local["clusters"]
    assert json.loads(json.dumps(remote["audits"])) == json.loads(json.dumps(local["audits"], default=str))
    assert remote["audits"]["replicas"]["verdict"] == "fail"
