"""`pykraft analyze` over simulator exports, both through the CLI: `pykraft sim sweep --export DIR` of a few seeds
of two cheap metadata scenarios (controllers and brokers, topics, broker faults), then `pykraft analyze DIR`. Every
audit passes (exit 0), the runs are told apart by the cluster id column, and the image at each exported cluster's
high watermark equals the controller's own replay (controller/log_replay.py) of the same files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.pipeline.layout import find_files

from .cluster_files import end_offset, replayed
from .decoded import check_tables
from .test_analyze import _expected_image, _image_of
from .test_sources import _plain

pytestmark = pytest.mark.spark

SWEEPS = (("metadata_basic", 1), ("metadata_brokers", 2))  # (scenario, seeds from 0)


def _pykraft(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykraft.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory) -> dict:
    exported, out = tmp_path_factory.mktemp("sim-exports"), tmp_path_factory.mktemp("sim-analyzed") / "out"
    for scenario, seeds in SWEEPS:
        sweep = _pykraft("sim", "sweep", "--scenario", scenario, "--seeds", str(seeds), "--json", "--export",
                         str(exported))
        assert sweep.returncode == 0, sweep.stderr[-2000:]
    result = _pykraft("analyze", str(exported), "--out", str(out))
    return {"exported": exported, "out": out, "result": result,
            "summary": json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else None}


def _traced_hwm(cluster_dir: Path) -> int:
    hwms = [json.loads(line)["hwm"] for trace in cluster_dir.glob("node-*/data/pykraft-trace.jsonl")
            for line in trace.read_text().splitlines() if '"hwm_advanced"' in line]
    return max(hwms)


def test_analyze_of_sim_exports_exits_0_with_every_audit_passing(analyzed):
    result = analyzed["result"]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert {a["verdict"] for a in analyzed["summary"]["audits"].values()} == {"pass"}
    assert "report: " in result.stdout


def test_the_cluster_id_column_tells_the_runs_apart(spark, analyzed):
    runs = {f"sim-{scenario}-{seed}" for scenario, seeds in SWEEPS for seed in range(seeds)}
    assert {p.name for p in analyzed["exported"].iterdir() if p.is_dir()} == runs
    summary_ids = [c["clusterId"] for c in analyzed["summary"]["clusters"]]
    assert sorted(summary_ids) == sorted(runs)
    out = analyzed["out"]
    for table in ("log_summary", "image_partitions", "image_brokers", "high_watermarks"):
        assert {r.cluster_id for r in spark.read.parquet(str(out / table)).select("cluster_id").collect()} == runs
    # Each run's rows are its own: the records counted per cluster are those of that run's files.
    counted = {(r.cluster_id, r.node_id): r.records
               for r in spark.read.parquet(str(out / "log_summary")).collect()}
    for run in runs:
        nodes = sorted((analyzed["exported"] / run).glob("node-*"))
        for node in nodes:
            node_id = int(node.name.split("-")[1])
            files = find_files([str(node / "data")], snapshots=False)
            expected = sum(len(_plain(Path(f.path))) for f in files)
            assert counted.get((run, node_id), 0) == expected, (run, node_id)


def test_every_table_equals_a_single_process_decoding_of_the_same_files(analyzed):
    rows = check_tables(analyzed["exported"], analyzed["out"])
    assert {r["cluster_id"] for r in rows} == {p.name for p in analyzed["exported"].iterdir() if p.is_dir()}


def test_image_at_each_clusters_hwm_equals_the_controllers_replay(analyzed):
    exported = analyzed["exported"]
    images = {c["clusterId"]: c for c in analyzed["summary"]["clusters"]}
    distinct = set()
    for run, cluster in sorted(images.items()):
        hwm = _traced_hwm(exported / run)
        assert cluster["highWatermark"] == hwm and cluster["offset"] == hwm - 1
        # Any node holding the whole committed prefix (the replica audit passed: those copies agree).
        holder = next(d for d in sorted(exported.glob(f"{run}/node-*/data")) if end_offset(d) >= hwm)
        brokers, partitions, features = _expected_image(replayed(holder, committed_offset=hwm - 1))
        expected = (brokers, sorted(partitions), features)  # the summary lists topics by name
        assert _image_of(cluster) == expected, run
        assert expected[0] and expected[1]  # brokers and partitions: not an empty image compared to an empty one
        distinct.add(repr(expected))
    assert len(distinct) > 1  # the runs' images differ: a mix-up of clusters would show
