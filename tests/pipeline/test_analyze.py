"""`analyze` over four clusters at once (the cluster id is a column): a clean one, one whose follower has a
flipped byte, one with a divergent tail under the same epoch, one with a crafted KIP-841 violation next to the
allowed sole-member case; plus a linearizable and a non-linearizable client history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pykraft.pipeline.run import AnalyzeOptions, analyze, failing

from .cluster_files import (
    divergent_tail,
    end_offset,
    flip_byte,
    make_cluster,
    reassignment_in_progress,
    replayed,
    segment,
    sole_member_then_violation,
    write_history,
)

pytestmark = pytest.mark.spark

CLEAN, FLIPPED, DIVERGENT, KIP841 = ("CleanClusterAAAAAAAAAAA", "FlippedClusterAAAAAAAAA", "DivergentClusterAAAAAAA",
                                     "Kip841ClusterAAAAAAAAAA")


@pytest.fixture(scope="module")
def scene(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("clusters")
    clean = make_cluster(root / "clean", CLEAN)
    reassignment_in_progress(clean)  # the image then holds adding and removing replicas
    flipped = make_cluster(root / "flipped", FLIPPED)
    position, flipped_offset = flip_byte(segment(flipped[2]), batch_index=4)
    divergent = make_cluster(root / "divergent", DIVERGENT)
    divergent_offset = divergent_tail(divergent, follower=divergent[2])
    kip = make_cluster(root / "kip841", KIP841)
    allowed, violation = sole_member_then_violation(kip)
    history = root / "histories" / "pykraft-history.jsonl"
    write_history(history, "good", [
        {"model": "kv", "client_id": 1, "input": '["put", "k", "a"]', "output": None, "call": 0, "return_time": 10},
        {"model": "kv", "client_id": 2, "input": '["get", "k"]', "output": '"a"', "call": 20, "return_time": 30}])
    write_history(history, "bad", [
        {"model": "kv", "client_id": 1, "input": '["put", "k", "a"]', "output": None, "call": 0, "return_time": 10},
        {"model": "kv", "client_id": 2, "input": '["get", "k"]', "output": None, "call": 20, "return_time": 30},
        {"model": "kv", "client_id": 3, "input": '["put", "j", "b"]', "output": None, "call": 0, "return_time": 5}])
    out = root / "out"
    return {"root": root, "out": out, "clean": clean, "flipped": flipped, "flipped_at": (position, flipped_offset),
            "divergent": divergent, "divergent_offset": divergent_offset, "kip": kip, "allowed": allowed,
            "violation": violation}


@pytest.fixture(scope="module")
def summary(spark, scene) -> dict:
    return analyze(spark, AnalyzeOptions([str(scene["root"])], str(scene["out"])))


def _audit(spark, scene, name: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(scene["out"] / f"audit_{name}")).collect()]


def _image(summary: dict, cluster_id: str) -> dict:
    return next(c for c in summary["clusters"] if c["clusterId"] == cluster_id)


def _expected_image(controller) -> tuple[list, list, list]:
    brokers = [{"brokerId": b, "brokerEpoch": r.epoch, "fenced": r.fenced, "inControlledShutdown":
                r.in_controlled_shutdown} for b, r in sorted(controller.cluster.brokers.items())]
    partitions = [(t.name, pid, p.leader, list(p.isr), list(p.replicas), list(p.adding_replicas),
                   list(p.removing_replicas), p.leader_epoch, p.partition_epoch)
                  for t in controller.replication.topics.values() for pid, p in sorted(t.partitions.items())]
    features = sorted(controller.features.finalized.items())
    return brokers, partitions, features


def _image_of(cluster: dict) -> tuple[list, list, list]:
    image = cluster["image"]
    brokers = [{k: b[k] for k in ("brokerId", "brokerEpoch", "fenced", "inControlledShutdown")}
               for b in image["brokers"]]
    partitions = [(t["name"], p["partitionId"], p["leader"], p["isr"], p["replicas"], p["addingReplicas"],
                   p["removingReplicas"], p["leaderEpoch"], p["partitionEpoch"])
                  for t in image["topics"] for p in t["partitions"]]
    features = sorted((f["name"], f["featureLevel"]) for f in image["features"])
    return brokers, partitions, features


def test_image_at_the_hwm_equals_the_controllers_replay(summary, scene):
    cluster = _image(summary, CLEAN)
    assert cluster["highWatermark"] == end_offset(scene["clean"][0])  # no traces: the prefix all nodes hold
    assert _image_of(cluster) == _expected_image(replayed(scene["clean"][0]))
    assert any(p[6] for p in _image_of(cluster)[1]), "the scene's reassignment in progress is not in the image"
    assert [v["voterId"] for v in cluster["image"]["voters"]] == [1, 2, 3]
    kip = _image(summary, KIP841)
    assert _image_of(kip) == _expected_image(replayed(scene["kip"][1]))


def test_image_at_an_earlier_offset_equals_a_replay_stopped_there(spark, scene, tmp_path):
    earlier = analyze(spark, AnalyzeOptions([str(scene["root"] / "clean")], str(tmp_path / "out"), at_offset=9))
    cluster = _image(earlier, CLEAN)
    assert cluster["offset"] == 9
    expected = _expected_image(replayed(scene["clean"][0], committed_offset=9))
    assert _image_of(cluster) == expected
    assert expected[1] == []  # before the topic: the comparison is not vacuous by accident
    assert expected != _expected_image(replayed(scene["clean"][0]))


def test_clean_cluster_passes_every_audit(spark, summary, scene):
    for name in summary["audits"]:
        rows = _audit(spark, scene, name)
        assert [r for r in rows if r.get("cluster_id") == CLEAN] == [], name


def test_flipped_byte_on_a_follower_is_named_by_node_file_position_and_offset(spark, scene):
    position, offset = scene["flipped_at"]
    rows = [r for r in _audit(spark, scene, "replicas") if r["cluster_id"] == FLIPPED]
    first = min(rows, key=lambda r: r["offset"])
    assert (first["node_id"], first["file"], first["position"], first["offset"]) == \
        (3, "__cluster_metadata-0/00000000000000000000.log", position, offset)
    assert first["crc_valid"] is False
    assert {r["node_id"] for r in rows} == {3}


def test_summary_names_the_data_directory_each_row_s_file_is_below(spark, summary, scene):
    """`file` is the path below the node's data directory; summary.json maps (cluster, node) to that directory,
    so the flipped batch's row leads back to the very file on disk."""
    first = min((r for r in _audit(spark, scene, "replicas") if r["cluster_id"] == FLIPPED), key=lambda r: r["offset"])
    homes = [d["path"] for d in summary["data_directories"]
             if (d["cluster_id"], d["node_id"]) == (first["cluster_id"], first["node_id"])]
    assert homes == [str(scene["flipped"][2].resolve())]
    assert Path(homes[0], first["file"]) == segment(scene["flipped"][2]).resolve()
    assert len(summary["data_directories"]) == 12  # 4 clusters x 3 nodes
    assert all(d["directory_id"] for d in summary["data_directories"])


def test_divergent_tail_under_the_same_epoch_is_flagged(spark, scene):
    rows = [r for r in _audit(spark, scene, "replicas") if r["cluster_id"] == DIVERGENT]
    assert rows and min(r["offset"] for r in rows) == scene["divergent_offset"]
    assert {r["node_id"] for r in rows} == {3}
    assert all(r["crc_valid"] for r in rows)  # well-formed batches, different bytes


def test_kip841_violation_flagged_and_sole_member_case_allowed(spark, scene):
    rows = [r for r in _audit(spark, scene, "kip841") if r["cluster_id"] == KIP841]
    assert {(r["offset"], r["partition"]) for r in rows} == {(scene["violation"], 0), (scene["violation"], 2)}
    assert not [r for r in rows if r["offset"] == scene["allowed"]]


def test_non_linearizable_history_flagged(spark, scene):
    rows = _audit(spark, scene, "linearizability")
    assert [(r["history"], r["key"]) for r in rows] == [("bad", "k")]
    verdicts = spark.read.parquet(str(scene["out"] / "linearizability")).collect()
    assert {(v.history, v.key, v.outcome) for v in verdicts} == {("good", "k", "OK"), ("bad", "k", "ILLEGAL"),
                                                                 ("bad", "j", "OK")}


def test_summary_and_failing_lines(summary, scene):
    on_disk = json.loads((scene["out"] / "summary.json").read_text())
    assert on_disk["audits"].keys() == summary["audits"].keys()
    verdicts = {name: a["verdict"] for name, a in summary["audits"].items()}
    assert verdicts["replicas"] == verdicts["kip841"] == verdicts["linearizability"] == "fail"
    assert verdicts["epochs"] == verdicts["leaders_per_epoch"] == "pass"
    lines = failing(summary)
    assert any(line.startswith("audit replicas FAILED") for line in lines)
    assert len(lines) == sum(v == "fail" for v in verdicts.values())


def test_report_has_every_section_each_cluster_apart_and_nothing_to_fetch(summary):
    """The report's sections and plots exist: the page's own, and for each of the four clusters a section of its
    own (its own time axis: clusters are never drawn on one plot), each with every sub-section; plots are inline
    SVG, nothing is fetched."""
    import re

    from pykraft.pipeline.report import CLUSTER_SECTIONS, SECTIONS

    page = Path(summary["report"]).read_text()
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in page
    assert "<script" not in page and "src=" not in page and "<link" not in page
    sections = re.split(r"<section class=cluster>", page)[1:]
    assert len(sections) == 4
    assert {re.search(r"<h2>Cluster (\S+)</h2>", part).group(1) for part in sections} == \
        {CLEAN, FLIPPED, DIVERGENT, KIP841}
    for part in sections:
        assert [t for t in CLUSTER_SECTIONS if f"<h3>{t}</h3>" not in part] == []
        # timeline, partitions, commit rate, record counts: each cluster's own figures
        assert part.count("<svg") >= 4
    assert page.count("<svg") >= 16
    for name, audit in summary["audits"].items():  # a sentence per audit: what it checks, how many rows
        assert f"Looked at {audit['looked_at']:,} " in page, name
    for directory in summary["data_directories"]:  # where a row's `file` is: every node's absolute data directory
        assert f"<td>{directory['path']}</td>" in page


def test_report_lists_a_bounded_number_of_data_directories():
    """Thousands of simulated runs analysed at once: the report names the first ones, summary.json all of them."""
    from pykraft.pipeline.report import MAX_DIRECTORIES, _directories

    directories = [{"cluster_id": "C", "node_id": i, "directory_id": "d", "path": f"/runs/{i}/data"}
                   for i in range(MAX_DIRECTORIES + 7)]
    page = _directories({"audits": {}, "data_directories": directories})
    assert "<td>/runs/0/data</td>" in page and f"<td>/runs/{MAX_DIRECTORIES}/data</td>" not in page
    assert "7 more in summary.json" in page
