"""The `kraft` streaming source killed hard: the driver process (a separate Python process and its JVM, in their
own process group) is SIGKILLed while a micro-batch is planned but not committed, not stopped with
query.stop(). Restarted from its checkpoint, the query delivers every committed record exactly once: the rows'
offsets are 0..n-1 with none missing or repeated, n reaches the high watermark seen before the restart, and each
row is the record a plain decoding of the controller's segment holds at that offset."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.pipeline.stream import quorum_point
from tests.e2e.helpers import FAST_TIMEOUTS, leader_status, values, wait_for, write

from .test_sources import _plain

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


def _count(folder: Path) -> int:
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def _mid_batch(checkpoint: Path) -> bool:
    """At least one batch committed, and a later one planned (its offsets written) but not yet committed."""
    commits = _count(checkpoint / "commits")
    return commits >= 1 and _count(checkpoint / "offsets") > commits


def test_driver_sigkilled_mid_stream_resumes_from_its_checkpoint_exactly(spark, tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=1, properties=FAST_TIMEOUTS)
    cluster.format_all()
    cluster.start_all()
    node = next(iter(cluster.nodes.values()))
    bootstrap = f"127.0.0.1:{node.port}"
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    try:
        wait_for(lambda: leader_status(cluster), "a leader", timeout=120)
        assert len(write(cluster, values("before", 600))) == 600
        log = open(tmp_path / "driver.log", "w")
        driver = subprocess.Popen([sys.executable, "-m", "tests.pipeline.stream_driver", bootstrap, str(out),
                                   str(checkpoint), str(tmp_path / "driver-local")], cwd=REPO, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_for(lambda: driver.poll() is not None or _mid_batch(checkpoint), "a micro-batch in flight",
                     timeout=300, interval=0.05)
            assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        finally:
            os.killpg(driver.pid, signal.SIGKILL)  # the driver and its JVM: the group it leads, by its id
            driver.wait(timeout=60)
            log.close()
        committed_before = _count(checkpoint / "commits")
        assert _count(checkpoint / "offsets") > committed_before  # killed between planning and committing
        assert len(write(cluster, values("after", 200))) == 200
        hwm = quorum_point(bootstrap).high_watermark
        query = (spark.readStream.format("kraft").option("bootstrap", bootstrap).load()
                 .writeStream.format("parquet").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start(str(out)))
        assert query.awaitTermination(300)
        assert query.exception() is None, query.exception()
    finally:
        cluster.stop_all()
    rows = spark.read.parquet(str(out)).select("offset", "timestamp", "is_control").collect()
    offsets = sorted(r.offset for r in rows)
    assert len(offsets) == len(set(offsets))  # no duplicate
    assert offsets == list(range(len(offsets)))  # no gap, from 0
    assert len(offsets) >= hwm
    on_disk = {r["offset"]: (r["timestamp"], r["isControl"])
               for path in sorted((node.data_dir / "__cluster_metadata-0").glob("*.log")) for r in _plain(path)}
    assert {r.offset: (r.timestamp, r.is_control) for r in rows} == {o: on_disk[o] for o in offsets}
