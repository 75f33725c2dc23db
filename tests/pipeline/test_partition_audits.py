"""The partition-log audits over two clusters analysed at once (partition_files.py): a clean one whose logs
start above 0, have a log cleaner's holes and an acknowledged history that reaches below the log start; and one
with a fault of every kind planted, each named by its audit with the node, file, position and offset."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pykraft.pipeline.run import AnalyzeOptions, analyze

from . import partition_files as pf
from .cluster_files import segment
from .test_sources import _plain

pytestmark = pytest.mark.spark

CLEAN, FAULTY = "PartitionCleanAAAAAAAAA", "PartitionFaultyAAAAAAAA"


def _registration(scene: pf.Scene, broker: int) -> int:
    """The offset of the broker's registration record: it is registered and fenced from there until unfenced."""
    for r in _plain(segment(scene.data(1))):
        m = r.get("metadata", {})
        if m.get("type") == "REGISTER_BROKER_RECORD" and m.get("brokerId") == broker:
            return r["offset"]
    raise AssertionError(f"broker {broker} never registered")


@pytest.fixture(scope="module")
def scene(spark, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("partitions")
    clean = pf.build(root / "clean", CLEAN)
    clean.acked += [(1, offset, f"gone-{offset}".encode()) for offset in (97, 98, 99)]  # below the log start
    txn = pf.transactions(clean)
    pf.write_all(clean)
    pf.write_txn_index(clean)
    pf.group_log(clean, [10, 20, 30])
    pf.kip848_group_log(clean)
    last = len(_plain(segment(clean.data(1)))) - 1
    pf.isr_view(clean, 4, 0, [4, 5], last)

    faulty = pf.build(root / "faulty", FAULTY)
    faults = {"flipped": (6, 0, *pf.flip_value_byte(faulty, 6, 0, batch_index=3)),
              "divergent": (6, 1, pf.divergent_tail(faulty, 6, 1, batches=2)),
              "lost": pf.remove_batch(faulty, 2, batch_index=5),
              "duplicate": pf.duplicate_batch(faulty, 2, batch_index=1)}
    pf.write_all(faulty)
    pf.group_log(faulty, [10, 30, 20])
    faults["fenced_at"] = _registration(faulty, 6)
    pf.isr_view(faulty, 4, 0, [4, 6], faults["fenced_at"])
    out = root / "out"
    summary = analyze(spark, AnalyzeOptions([str(root)], str(out)))

    def audit(name: str, cluster: str) -> list[dict]:
        rows = spark.read.parquet(str(out / f"audit_{name}")).collect()
        return [r.asDict(recursive=True) for r in rows if r["cluster_id"] == cluster]

    return {"summary": summary, "clean": clean, "faulty": faulty, "faults": faults, "audit": audit, "out": out,
            "txn": txn}


PARTITION_AUDITS = ("partition_replicas", "idempotence", "acknowledged", "consumer_groups", "kip841_brokers")


def test_the_clean_cluster_passes_with_holes_and_a_log_start_above_0(scene):
    for name in PARTITION_AUDITS + ("readable", "epochs"):
        assert scene["audit"](name, CLEAN) == [], name
    assert scene["summary"]["audits"]["partition_replicas"]["looked_at"] > 0


def test_transactions_and_kip848_groups_are_decoded_and_pass_on_the_clean_cluster(scene):
    """The clean cluster's orders-0 ends with an aborted transaction whose values were resent and committed (the
    history names them once) and an acknowledged record the cleaner removed from an aborted transaction; its
    `__consumer_offsets` holds a KIP-848 group whose aborted transactional commit is a lower offset: none of it
    is lost, duplicated, phantom or a step back."""
    spark = SparkSession.getActiveSession()
    records = spark.read.parquet(str(scene["out"] / "records")).filter(F.col("cluster_id") == CLEAN)
    orders = {(r["offset"], r["control_type"], r["value"]) for r in records.filter(
        (F.col("topic") == pf.TOPIC) & (F.col("partition") == 0) & (F.col("node_id") == 4)
        & F.col("is_transactional")).collect()}
    first, second = scene["txn"]["aborted"]
    assert {(first, None, b"tx-1"), (second, None, b"tx-2")} <= orders  # the aborted copies are in the log
    assert sorted(o for o, kind, _ in orders if kind) == [second + 1, second + 4, second + 6]
    assert scene["txn"]["cleaned"][0] not in {o for o, _, _ in orders}
    kinds = {r["record_type"] for r in records.filter(F.col("topic").startswith("__")).select("record_type").collect()}
    assert {"TRANSACTION_LOG", "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_MEMBER_METADATA", "OFFSET_COMMIT",
            "GROUP_METADATA", "ABORT", "COMMIT"} <= kinds
    for name in ("acknowledged", "consumer_groups", "idempotence", "partition_replicas"):
        assert scene["audit"](name, CLEAN) == [], name
    commits = [r for r in scene_table(scene, "consumer_offsets") if r["cluster_id"] == CLEAN and r["group"] == "g2"]
    assert sorted((r["committed_offset"], r["generation"]) for r in commits) == [(50, 5), (60, 5), (70, 5)]


def test_a_flipped_byte_in_a_followers_record_is_named_by_node_file_position_and_offset(scene):
    node, partition, position, base = scene["faults"]["flipped"]
    rows = [r for r in scene["audit"]("partition_replicas", FAULTY) if r["partition"] == partition]
    first = min(rows, key=lambda r: r["offset"])
    assert (first["node_id"], first["file"], first["position"], first["offset"]) == \
        (node, scene["faulty"].segment(node, partition), position, base)
    assert first["problem"] == "batch CRC does not match its bytes"
    assert {r["node_id"] for r in rows} == {node}


def test_a_divergent_tail_on_a_follower_is_flagged_from_its_first_offset(scene):
    node, partition, first_offset = scene["faults"]["divergent"]
    rows = [r for r in scene["audit"]("partition_replicas", FAULTY) if r["partition"] == partition]
    assert {r["node_id"] for r in rows} == {node}
    assert min(r["offset"] for r in rows) == first_offset
    assert {r["problem"] for r in rows} == {"record differs from the reference's"}
    assert all(r["reference_node"] == pf.LEADERS[partition] for r in rows)


def test_a_duplicated_idempotent_batch_is_flagged_on_every_replica(scene):
    copy, original = scene["faults"]["duplicate"]
    rows = scene["audit"]("idempotence", FAULTY)
    assert {(r["node_id"], r["partition"], r["offset"], r["first_copy_offset"]) for r in rows} == \
        {(b, 2, copy, original) for b in pf.BROKERS}
    duplicated = [r for r in scene["audit"]("acknowledged", FAULTY) if r["kind"] == "duplicated"]
    assert {(r["partition"], r["offset"]) for r in duplicated} == {(2, copy + j) for j in range(pf.PER_BATCH)}


def test_an_acknowledged_batch_removed_from_every_replica_is_lost(scene):
    removed = scene["faults"]["lost"]
    lost = [r for r in scene["audit"]("acknowledged", FAULTY) if r["kind"] == "lost" and r["partition"] == 2]
    # Partition 2's leader (6) and ISR (6, 4, 5) each lack the three records.
    assert {(r["node_id"], r["offset"]) for r in lost} == {(b, o) for b in pf.BROKERS for o in removed}
    figures = {(r["cluster_id"], r["topic"]): r for r in
               (x.asDict() for x in scene_table(scene, "acknowledged_history"))}
    assert figures[(FAULTY, pf.TOPIC)]["lost"] >= len(removed) * 3
    assert figures[(CLEAN, pf.TOPIC)]["lost"] == 0 and figures[(CLEAN, pf.TOPIC)]["failed"] == 1


def scene_table(scene: dict, name: str) -> list:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession().read.parquet(str(scene["out"] / name)).collect()


def test_a_committed_offset_moving_backwards_in_a_generation_is_flagged(scene):
    rows = scene["audit"]("consumer_groups", FAULTY)
    assert [(r["group"], r["topic"], r["partition"], r["generation"], r["committed_offset"], r["previous_offset"])
            for r in rows] == [("g", pf.TOPIC, 0, 1, 20, 30)]
    commits = [r for r in scene_table(scene, "consumer_offsets") if r["cluster_id"] == CLEAN and r["group"] == "g"]
    assert sorted(r["committed_offset"] for r in commits) == [10, 20, 30]


def test_a_fenced_broker_in_a_leaders_isr_view_is_flagged(scene):
    rows = scene["audit"]("kip841_brokers", FAULTY)
    assert [(r["node_id"], r["partition"], r["broker_id"], r["state"], r["metadata_offset"]) for r in rows] == \
        [(4, 0, 6, "FENCED", scene["faults"]["fenced_at"])]


def test_failing_lines_name_each_partition_audit(scene):
    verdicts = {name: a["verdict"] for name, a in scene["summary"]["audits"].items()}
    assert all(verdicts[name] == "fail" for name in PARTITION_AUDITS)
    first = scene["summary"]["audits"]["partition_replicas"]["first"][0]
    assert {"node_id", "file", "position", "offset"} <= set(first)
