"""`pykraft analyze` (the CLI) over the directories of a real local cluster (3 controllers, 3 brokers, `pykraft
server start` processes): a topic, records produced by a stock client (kafka-python, idempotent, acks=all) that
writes what it was told to a client history, a consumer group committing its offsets, a KIP-848 consumer and a
transactional producer (one transaction committed with the consumer's offsets, one aborted: real_txn.py), a broker's
controlled shutdown and more records, a SIGKILL of the active controller, a SIGKILL of another broker, then every process
SIGKILLed at once.

- Clean: exit 0, every audit passes; the image at the high watermark equals what `pykraft topics describe` and
  `pykraft brokers list` printed just before the kill, and the controller's own replay; every table read back
  equals a single-process decoding of the same files (dump-log's code path).
- Copies of the directories with a fault planted in each (a flipped byte and a divergent tail in a user
  partition's follower, a duplicated idempotent batch on the leader, an acknowledged batch removed from every
  replica), each copy under its own cluster id, analysed in one run: exit 1, and each fault named by node, file,
  position and offset."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.records.client_history import PRODUCE_HISTORY_FILE, ProduceHistory
from tests.e2e.data_plane_checks import DATA_PLANE_TIMING
from tests.e2e.helpers import leader_status, wait_for
from tests.e2e.stock_clients import consume_group, produce

from . import real_faults as rf
from . import real_txn
from .cluster_files import replayed
from .test_analyze import _expected_image, _image_of
from .decoded import check_tables

pytestmark = pytest.mark.spark
kafka = pytest.importorskip("kafka")

TOPIC = "events"
TXN_TOPIC = "txn-out"
RECORDS = 60
_PARTITION_LINE = re.compile(r"Partition: (\d+)\tLeader: (\S+)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)")


def _ids(text: str) -> list[int]:
    return [int(i) for i in text.split(",") if i]


def _described(cluster: LocalCluster, broker: int) -> dict[int, tuple]:
    """partition -> (leader, replicas, isr) as `topics describe` prints them."""
    out = cluster.cli("topics", "describe", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[broker].port}",
                      "--topic", TOPIC).stdout
    rows = {}
    for match in _PARTITION_LINE.finditer(out):
        leader = None if match.group(2) == "none" else int(match.group(2))
        rows[int(match.group(1))] = (leader, _ids(match.group(3)), _ids(match.group(4)))
    return rows


def _brokers_listed(cluster: LocalCluster, broker: int) -> dict[int, str]:
    """broker id -> "fenced"/"unfenced" from `brokers list`'s table (fenced brokers are listed too)."""
    out = cluster.cli("brokers", "list", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[broker].port}").stdout
    lines = out.strip().splitlines()
    assert lines[0].split() == ["ID", "HOST", "PORT", "RACK", "STATE"]
    return {int(cells[0]): cells[-1] for cells in (line.split() for line in lines[1:])}


def _settled(cluster: LocalCluster, broker: int, down: set[int]) -> tuple[dict, dict] | None:
    """What the tools print once every broker in `down` is fenced and out of every ISR, and the output no longer
    changes between two reads."""
    first = (_described(cluster, broker), _brokers_listed(cluster, broker))
    described, listed = first
    if len(described) != 2 or any(listed.get(b) != "fenced" for b in down):
        return None
    if any(set(isr) & down for _, _, isr in described.values()):
        return None
    return first if (_described(cluster, broker), _brokers_listed(cluster, broker)) == first else None


def _workload(cluster: LocalCluster, root: Path) -> dict:
    first, shut_down, killed = cluster.broker_ids
    servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
    history = ProduceHistory(str(root / PRODUCE_HISTORY_FILE), "e2e")
    acked = produce("kafka-python", servers, TOPIC, RECORDS, lambda i: None, history)
    assert len(acked) == RECORDS
    assert consume_group("kafka-python", servers, TOPIC, "analyze-check", RECORDS)  # __consumer_offsets commits
    txn = real_txn.run(servers, TOPIC, TXN_TOPIC, history)
    controllers: list[int] = []

    def on_sent(i: int) -> None:
        if i == RECORDS // 3:
            assert cluster.stop(shut_down) == 0  # SIGTERM: a controlled shutdown
        if i == 2 * RECORDS // 3:
            controllers.append(leader_status(cluster)["LeaderId"])
            cluster.kill(controllers[0])  # the active controller, SIGKILL

    live = f"127.0.0.1:{cluster.nodes[first].port},127.0.0.1:{cluster.nodes[killed].port}"
    produce("kafka-python", live, TOPIC, RECORDS, on_sent, history)
    history.close()
    wait_for(lambda: leader_status(cluster) is not None and leader_status(cluster)["LeaderId"] != controllers[0],
             "a new active controller")
    cluster.kill(killed)
    return {"shut_down": shut_down, "killed": killed, "controller": controllers[0], "txn": txn}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("real-cluster") / "cluster"
    cluster = LocalCluster(root, controllers=3, brokers=3, properties=DATA_PLANE_TIMING)
    cluster.format_all()
    cluster.start_all()
    try:
        first = cluster.broker_ids[0]
        for topic, partitions in ((TOPIC, "2"), (TXN_TOPIC, "1")):
            wait_for(lambda: cluster.cli("topics", "create", "--bootstrap-server",
                                         f"127.0.0.1:{cluster.nodes[first].port}", "--topic", topic, "--partitions",
                                         partitions, "--replication-factor", "3", check=False).returncode == 0,
                     f"{topic} created (every broker unfenced first)", timeout=120)
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in _described(cluster, first).values()),
                 "both partitions with a full ISR", timeout=120)
        done = _workload(cluster, root)
        described, listed = wait_for(lambda: _settled(cluster, first, {done["shut_down"], done["killed"]}),
                                     "both brokers fenced and out of the ISRs", timeout=120)
        leader = leader_status(cluster)["LeaderId"]
        for node_id in cluster.nodes:
            cluster.kill(node_id)  # all at once: nothing is written after the tools' answers
    finally:
        cluster.stop_all()
    return {"root": root, "cluster": cluster, "described": described, "listed": listed, "leader": leader, **done}


def _analyze(*roots: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pykraft.cli.main", "analyze", *map(str, roots), "--out", str(out)],
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def clean(run) -> dict:
    out = run["root"].parent / "out-clean"
    result = _analyze(run["root"], out=out)
    return {"result": result, "out": out, "summary": json.loads((out / "summary.json").read_text())}


def test_every_audit_passes_on_a_real_cluster_and_the_cli_exits_0(clean):
    assert clean["result"].returncode == 0, clean["result"].stderr[-3000:]
    audits = clean["summary"]["audits"]
    assert {a["verdict"] for a in audits.values()} == {"pass"}
    for name in ("partition_replicas", "idempotence", "acknowledged", "consumer_groups", "kip841_brokers"):
        assert audits[name]["looked_at"] > 0, name  # each one really looked at rows of this run


def test_image_at_the_hwm_equals_topics_describe_brokers_list_and_the_controllers_replay(clean, run):
    (cluster,) = clean["summary"]["clusters"]
    assert cluster["clusterId"] == run["cluster"].cluster_id
    (topic,) = [t for t in cluster["image"]["topics"] if t["name"] == TOPIC]
    got = {p["partitionId"]: (None if p["leader"] < 0 else p["leader"], p["replicas"], p["isr"])
           for p in topic["partitions"]}
    assert got == run["described"]
    states = {b["brokerId"]: "fenced" if b["fenced"] else "unfenced" for b in cluster["image"]["brokers"]}
    assert states == run["listed"]
    data_dir = run["cluster"].nodes[run["leader"]].data_dir
    brokers, partitions, features = _expected_image(replayed(data_dir, committed_offset=cluster["highWatermark"] - 1))
    assert _image_of(cluster) == (brokers, sorted(partitions), features)  # the summary lists topics by name


def _parquet(out: Path, name: str) -> list[dict]:
    return pq.ParquetDataset(out / name).read().to_pylist()


def test_every_table_equals_a_single_process_decoding_of_the_same_files(clean, run):
    rows = check_tables(run["root"], clean["out"])
    assert {r["topic"] for r in rows} >= {TOPIC, "__cluster_metadata", "__consumer_offsets"}
    commits = _parquet(clean["out"], "consumer_offsets")
    assert {(c["group"], c["topic"]) for c in commits} == {("analyze-check", TOPIC), (real_txn.GROUP, TOPIC)}
    last = {}
    for c in sorted((c for c in commits if c["group"] == "analyze-check"), key=lambda c: c["log_offset"]):
        last[c["partition"]] = c["committed_offset"]
    assert sum(last.values()) == RECORDS  # the group read the first RECORDS and committed their end


def test_transactions_and_kip848_records_of_a_real_cluster_are_decoded(clean, run):
    """Every record of the internal topics has its type (markers, transaction log, KIP-848 group records, offset
    commits); the KIP-848 group's offsets are those of the committed transaction only, its epoch as generation."""
    rows = _parquet(clean["out"], "records")
    internal = [r for r in rows if r["topic"] in ("__consumer_offsets", "__transaction_state")]
    assert [r for r in internal if r["record_type"] is None and r["error"] is None] == []
    kinds = {r["record_type"] for r in internal}
    assert {"TRANSACTION_LOG", "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_MEMBER_METADATA",
            "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "OFFSET_COMMIT", "COMMIT", "ABORT"} <= kinds
    states = {json.loads(r["payload"])["transactionStatus"] for r in internal
              if r["record_type"] == "TRANSACTION_LOG" and r["value"] is not None}
    assert {"Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"} <= states
    sink = [r for r in rows if r["topic"] == TXN_TOPIC]
    assert {r["control_type"] for r in sink if r["is_control"]} == {"COMMIT", "ABORT"}
    assert all(r["is_transactional"] for r in sink)
    commits = [c for c in _parquet(clean["out"], "consumer_offsets") if c["group"] == real_txn.GROUP]
    assert {(c["topic"], c["partition"]): c["committed_offset"] for c in commits} == \
        run["txn"]["committed_positions"]
    assert all(c["generation"] is not None and c["generation"] > 0 for c in commits)


def test_the_output_holds_the_tables_and_nothing_of_sparks(clean):
    listed = set(clean["summary"]["tables"])
    assert {"records", "snapshots", "traces", "audit_partition_replicas", "acknowledged_history"} <= listed
    assert all((clean["out"] / name / "_SUCCESS").exists() for name in listed)
    assert not [p for p in clean["out"].iterdir() if p.name.startswith(".") or p.name.startswith("spark")]
    # records is partitioned by cluster and topic: one folder per topic below the cluster's
    folders = {p.name for p in (clean["out"] / "records").glob("cluster_id=*/topic=*")}
    assert f"topic={TOPIC}" in folders and "topic=__cluster_metadata" in folders


@pytest.fixture(scope="module")
def faulted(run, clean) -> dict:
    root, shut_down = run["root"], run["shut_down"]
    copies = run["root"].parent / "faulted"
    leader = next(p["leader"] for t in clean["summary"]["clusters"][0]["image"]["topics"] if t["name"] == TOPIC
                  for p in t["partitions"] if p["partitionId"] == 0)
    faults = {}
    flipped = rf.copy_cluster(root, copies / "flipped", "FlippedRealClusterAAAAA")
    faults["flipped"] = (shut_down, rf.segment(flipped, shut_down, TOPIC, 0),
                         rf.flip_byte(rf.segment(flipped, shut_down, TOPIC, 0), 1))
    divergent = rf.copy_cluster(root, copies / "divergent", "DivergentRealClusterAAA")
    agreed = _agreed_batches(clean["out"], root, shut_down, leader)
    faults["divergent"] = (shut_down, rf.segment(divergent, shut_down, TOPIC, 0),
                           rf.diverge_batches(rf.segment(divergent, shut_down, TOPIC, 0), agreed[-2:]))
    duplicated = rf.copy_cluster(root, copies / "duplicated", "DuplicatedRealClusterAA")
    faults["duplicated"] = (leader, rf.duplicate_last_idempotent(rf.segment(duplicated, leader, TOPIC, 0)))
    lost = rf.copy_cluster(root, copies / "lost", "LostRealClusterAAAAAAAA")
    victim = rf.batches(rf.segment(lost, leader, TOPIC, 0))[2]
    assert rf.remove_batch_everywhere(lost, run["cluster"].broker_ids, TOPIC, 0, victim.base_offset) >= 2
    faults["lost"] = (leader, victim)
    out = copies.parent / "out-faulted"
    result = _analyze(copies, out=out)
    return {"result": result, "out": out, "faults": faults}


def _agreed_batches(out: Path, root: Path, follower: int, leader: int) -> list[int]:
    """Base offsets of the follower's batches of partition 0 that hold the leader's records (same epoch and value)
    below the high watermark the leader checkpointed: the tail a divergence must not hide in (a follower's stale
    tail of another epoch is legitimately different)."""
    from pykraft.storage.offset_checkpoints import read_offsets

    hwm = read_offsets(str(root / f"node-{leader}" / "data" / "replication-offset-checkpoint"))[(TOPIC, 0)]
    rows = [r for r in _parquet(out, "records") if r["topic"] == TOPIC and r["partition"] == 0]
    theirs = {r["offset"]: (r["leader_epoch"], r["value"]) for r in rows if r["node_id"] == leader}
    batches: dict[int, bool] = {}
    for r in rows:
        if r["node_id"] == follower:
            same = r["offset"] < hwm and theirs.get(r["offset"]) == (r["leader_epoch"], r["value"])
            batches[r["base_offset"]] = batches.get(r["base_offset"], True) and same
    agreed = sorted(b for b, ok in batches.items() if ok)
    assert len(agreed) >= 4, (hwm, len(batches))
    return agreed


def _rows(faulted: dict, audit: str, cluster_id: str) -> list[dict]:
    return [r for r in _parquet(faulted["out"], f"audit_{audit}") if r["cluster_id"] == cluster_id]


def test_planted_faults_exit_1_with_a_line_per_failing_audit(faulted):
    result = faulted["result"]
    assert result.returncode == 1, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("audit ")]
    failed = {line.split()[1] for line in lines}
    assert {"partition_replicas", "idempotence", "acknowledged"} <= failed
    replicas = next(line for line in lines if line.startswith("audit partition_replicas FAILED"))
    assert "node_id=" in replicas and "file=events-0/" in replicas and "offset=" in replicas


def test_the_flipped_byte_and_the_divergent_tail_are_named_by_node_file_position_offset(faulted):
    for name, cluster_id in (("flipped", "FlippedRealClusterAAAAA"), ("divergent", "DivergentRealClusterAAA")):
        node, path, batch = faulted["faults"][name]
        first = min(_rows(faulted, "partition_replicas", cluster_id), key=lambda r: r["offset"])
        assert (first["node_id"], first["file"], first["position"], first["offset"]) == \
            (node, f"{path.parent.name}/{path.name}", batch.position, batch.base_offset if name == "flipped"
             else batch.last_offset), name


def test_the_duplicated_idempotent_batch_and_the_removed_acknowledged_batch_are_flagged(faulted):
    leader, (copy, original) = faulted["faults"]["duplicated"]
    rows = _rows(faulted, "idempotence", "DuplicatedRealClusterAA")
    assert [(r["node_id"], r["offset"], r["first_copy_offset"]) for r in rows] == [(leader, copy, original)]
    assert {r["kind"] for r in _rows(faulted, "acknowledged", "DuplicatedRealClusterAA")} == {"duplicated"}
    leader, victim = faulted["faults"]["lost"]
    lost = _rows(faulted, "acknowledged", "LostRealClusterAAAAAAAA")
    assert {r["kind"] for r in lost} == {"lost"}
    assert {r["offset"] for r in lost} == set(range(victim.base_offset, victim.last_offset + 1))
    assert leader in {r["node_id"] for r in lost}
