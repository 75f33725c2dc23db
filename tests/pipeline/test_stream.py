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


# Snapshots after ~2 kB of records, segments rolled after 300 ms and deleted once a snapshot covers them; NoOps
# only every 5 s, so no newer snapshot replaces the one the stream plans while it downloads it.
CLEANING = {**FAST_TIMEOUTS, "metadata.log.max.record.bytes.between.snapshots": "2000",
            "metadata.log.segment.ms": "300", "metadata.max.retention.ms": "1",
            "metadata.max.idle.interval.ms": "5000"}


def _log_start(node) -> int:
    names = [p.name for p in (node.data_dir / "__cluster_metadata-0").glob("*.log")]
    return min(int(n[:20]) for n in names) if names else 0


def test_a_stream_started_below_the_log_start_reads_the_latest_snapshot_first(spark, tmp_path):
    from pykraft.pipeline.decode import decode_bytes
    from pykraft.pipeline.layout import find_files

    cluster = LocalCluster(tmp_path / "cluster", controllers=1, properties=CLEANING)
    cluster.format_all()
    cluster.start_all()
    node = next(iter(cluster.nodes.values()))
    try:
        wait_for(lambda: leader_status(cluster), "a leader", timeout=120)

        def cleaned() -> bool:
            write(cluster, values(f"early-{time.monotonic()}", 40))
            return _log_start(node) > 0

        wait_for(cleaned, "segments below a snapshot deleted", timeout=180, interval=0.4)
        # A few records past the latest snapshot (too few bytes to trigger another): without them the snapshot may
        # end at the HWM and leave the stream no log to read after it.
        assert len(write(cluster, values(f"late-{time.monotonic()}", 3))) == 3
        query = (spark.readStream.format("kraft").option("bootstrap", f"127.0.0.1:{node.port}").load()
                 .writeStream.format("parquet").option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start(str(tmp_path / "out")))
        assert query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        snapshots = {f.path.rsplit("/", 1)[-1]: f for f in find_files([str(node.data_dir)], snapshots=True)}
    finally:
        cluster.stop_all()
    rows = spark.read.parquet(str(tmp_path / "out")).select("file", "offset", "position", "value").collect()
    from_snapshot = sorted((r for r in rows if r.file.endswith(".checkpoint")), key=lambda r: r.position)
    assert from_snapshot, "the stream started at 0 below the log start got no snapshot"
    name = from_snapshot[0].file.rsplit("/", 1)[-1]
    end = int(name[:20])
    assert end > 0 and {r.offset for r in from_snapshot} == {end - 1}
    # The rows are the snapshot file's records, in order (the leader still holds it: no newer one was taken).
    on_disk = snapshots[name]
    expected = [r for b in decode_bytes(open(on_disk.path, "rb").read(), on_disk, metadata=True, snapshot=True)
                for r in b.to_pylist()]
    assert [(r.position, r.value) for r in from_snapshot] == [(r["position"], r["value"]) for r in expected]
    # Then the log from the snapshot's end: every offset once, none from below it.
    offsets = sorted(r.offset for r in rows if not r.file.endswith(".checkpoint"))
    assert offsets and offsets == list(range(end, end + len(offsets)))
