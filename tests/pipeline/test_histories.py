"""The history tables of `analyze` (leader per epoch, voter-set changes, ISR changes per partition, the broker
timeline, the commit rate) against an independent computation: a plain single-process decoding of the same
segment (dump-log's code path, `_plain`) folded by hand, record by record, in a few lines of Python.

The log: the sample start-up log (brokers registered and unfenced, a topic, an ISR shrink, a snapshot at 13 that
the segment still reaches below) and two batches appended 10 s later (ISR changes, brokers fenced)."""

from __future__ import annotations

from collections import Counter

import pytest

from pykraft.pipeline.run import AnalyzeOptions, analyze

from .cluster_files import make_cluster, segment, sole_member_then_violation
from .test_sources import _plain

pytestmark = pytest.mark.spark

CLUSTER = "HistoryClusterAAAAAAAAA"


@pytest.fixture(scope="module")
def scene(spark, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("histories")
    data = make_cluster(root / "c", CLUSTER)
    sole_member_then_violation(data)
    out = root / "out"
    analyze(spark, AnalyzeOptions([str(root / "c")], str(out)))
    records = _plain(segment(data[0]))
    assert all(r["crcValid"] for r in records)

    def table(name: str) -> list[dict]:
        return [r.asDict(recursive=True) for r in spark.read.parquet(str(out / name)).collect()]

    return {"records": records, "table": table}


def _broker_state(fenced: bool, shutting_down: bool) -> str:
    return "CONTROLLED_SHUTDOWN" if shutting_down else "FENCED" if fenced else "UNFENCED"


def _broker_timeline(records: list[dict]) -> set[tuple]:
    """(offset, broker, state) after every broker record, folded from the decoded records."""
    brokers: dict[int, list[bool]] = {}  # broker -> [fenced, in controlled shutdown]
    rows = set()
    for r in records:
        m = r.get("metadata", {})
        kind, broker = m.get("type"), m.get("brokerId", m.get("id"))
        if kind == "REGISTER_BROKER_RECORD":
            brokers[broker] = [m["fenced"], m["inControlledShutdown"]]
        elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
            if m.get("fenced", 0) != 0:
                brokers[broker][0] = m["fenced"] == 1
            if m.get("inControlledShutdown", 0) == 1:
                brokers[broker][1] = True
        elif kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            brokers[broker][0] = kind == "FENCE_BROKER_RECORD"
        elif kind == "UNREGISTER_BROKER_RECORD":
            brokers.pop(broker, None)
            rows.add((r["offset"], broker, "UNREGISTERED"))
            continue
        else:
            continue
        rows.add((r["offset"], broker, _broker_state(*brokers[broker])))
    return rows


def _isr_changes(records: list[dict]) -> set[tuple]:
    """(offset, topic, partition, leader, isr) after every Partition/PartitionChange record."""
    names: dict[str, str] = {}
    partitions: dict[tuple[str, int], dict] = {}
    rows = set()
    for r in records:
        m = r.get("metadata", {})
        kind = m.get("type")
        if kind == "TOPIC_RECORD":
            names[m["topicId"]] = m["name"]
            continue
        if kind not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            continue
        key = (m["topicId"], m["partitionId"])
        if kind == "PARTITION_RECORD":
            partitions[key] = {"leader": m["leader"], "isr": list(m["isr"])}
        else:
            if m.get("isr") is not None:
                partitions[key]["isr"] = list(m["isr"])
            if m.get("leader", -2) != -2:
                partitions[key]["leader"] = m["leader"]
        p = partitions[key]
        rows.add((r["offset"], names[key[0]], key[1], p["leader"], tuple(p["isr"])))
    return rows


def test_broker_timeline_equals_a_fold_of_the_decoded_records(scene):
    got = {(r["offset"], r["broker_id"], r["state"]) for r in scene["table"]("broker_history")}
    expected = _broker_timeline(scene["records"])
    assert {o for o, _, _ in expected} & set(range(13))  # registrations below the snapshot are history too
    assert {s for _, _, s in expected} >= {"FENCED", "UNFENCED"}
    assert got == expected


def test_isr_changes_equal_a_fold_of_the_decoded_records(scene):
    got = {(r["offset"], r["topic"], r["partition"], r["leader"], tuple(r["isr"]))
           for r in scene["table"]("partition_history")}
    expected = _isr_changes(scene["records"])
    assert len({(t, p) for _, t, p, _, _ in expected}) == 3 and len(expected) > 3
    assert got == expected


def test_leader_per_epoch_and_voter_sets_equal_the_decoded_control_records(scene):
    records = scene["records"]
    control = [r for r in records if r["isControl"]]
    leaders = {(r["leaderEpoch"], r["offset"], r["timestamp"], r["control"]["leaderId"]) for r in control
               if r["control"]["type"] == "LeaderChange"}
    assert leaders
    assert {(r["leader_epoch"], r["offset"], r["timestamp"], r["leader_id"])
            for r in scene["table"]("leaders")} == leaders
    voters = {(r["offset"], r["timestamp"], tuple(v["voterId"] for v in r["control"]["voters"])) for r in control
              if r["control"]["type"] == "KRaftVoters"}
    assert voters
    assert {(r["offset"], r["timestamp"], tuple(r["voters"])) for r in scene["table"]("voters")} == voters


def test_commit_rate_counts_every_committed_record_per_second(scene):
    expected = Counter(r["timestamp"] // 1000 for r in scene["records"])
    assert len(expected) == 2  # the start-up second and the appended batches' second
    got = {r["second"]: r["records"] for r in scene["table"]("commit_rate")}
    assert got == dict(expected)
