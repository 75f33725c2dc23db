"""The `kraft` streaming source against a real single-controller process: a query stopped mid-stream and
restarted from its checkpoint delivers every committed offset exactly once."""

from __future__ import annotations

import time

import pytest

from pykraft.node.local_cluster import LocalCluster

from tests.e2e.helpers import FAST_TIMEOUTS, leader_status, values, wait_for, write

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def controller(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("stream-cluster"), controllers=1, properties=FAST_TIMEOUTS)
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: leader_status(cluster), "a leader", timeout=120)
        yield cluster
    finally:
        cluster.stop_all()


def _query(spark, bootstrap: str, out, checkpoint, **trigger):
    stream = (spark.readStream.format("kraft").option("bootstrap", bootstrap).option("maxRecordsPerTrigger", "150")
              .load())
    return (stream.writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
            .trigger(**trigger).start(str(out)))


def test_restart_from_checkpoint_resumes_with_no_gap_and_no_duplicate(spark, controller, tmp_path):
    node = next(iter(controller.nodes.values()))
    bootstrap = f"127.0.0.1:{node.port}"
    assert len(write(controller, values("first", 400))) == 400
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    first = _query(spark, bootstrap, out, checkpoint, processingTime="1 second")
    deadline = time.monotonic() + 180
    while not (first.lastProgress and first.lastProgress["numInputRows"] > 0):
        assert time.monotonic() < deadline and first.exception() is None, first.exception()
        time.sleep(0.5)
    first.stop()  # mid-stream: 150 records per trigger, more than 400 written
    partial = spark.read.parquet(str(out)).count()
    assert 0 < partial
    assert len(write(controller, values("second", 200))) == 200
    second = _query(spark, bootstrap, out, checkpoint, availableNow=True)
    assert second.awaitTermination(300)
    assert second.exception() is None
    rows = spark.read.parquet(str(out)).select("offset", "value").collect()
    offsets = sorted(r.offset for r in rows)
    assert offsets == list(range(len(offsets)))  # from offset 0, no gap, no duplicate
    seen = {bytes(r.value) for r in rows if r.value is not None}
    assert set(values("first", 400)) | set(values("second", 200)) <= seen
    assert len(offsets) > partial


def test_cli_stream_available_now(controller, tmp_path):
    import subprocess
    import sys

    node = next(iter(controller.nodes.values()))
    result = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", "--stream",
                             "--bootstrap-controller", f"127.0.0.1:{node.port}", "--out", str(tmp_path / "out"),
                             "--available-now"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    count = int(result.stdout.strip().splitlines()[-1].split()[0])
    assert count > 0


def test_cli_stream_unreachable_quorum_exits_2(tmp_path):
    import subprocess
    import sys

    from pykraft.node.local_cluster import free_ports

    (port,) = free_ports(1)
    result = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", "--stream",
                             "--bootstrap-controller", f"127.0.0.1:{port}", "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot describe the quorum" in result.stderr
