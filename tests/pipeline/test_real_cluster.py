"""`analyze` over the directories of a real local cluster (3 controllers, 3 brokers, `pykraft server start`
processes): a topic, a broker's controlled shutdown, a SIGKILL of another broker and of a controller, then every
remaining process SIGKILLed at once. Every audit passes, and the image at the high watermark equals what
`pykraft topics describe` and `pykraft brokers list` printed just before the kill, and the controller's own replay
(controller/log_replay.py) of a controller's log up to that high watermark."""

from __future__ import annotations

import re

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.pipeline.run import AnalyzeOptions, analyze, failing
from tests.e2e.data_plane_checks import DATA_PLANE_TIMING
from tests.e2e.helpers import leader_status, wait_for

from .cluster_files import replayed
from .test_analyze import _expected_image, _image_of

pytestmark = pytest.mark.spark

TOPIC = "events"
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


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("real-cluster")
    cluster = LocalCluster(root, controllers=3, brokers=3, properties=DATA_PLANE_TIMING)
    cluster.format_all()
    cluster.start_all()
    try:
        first, shut_down, killed = cluster.broker_ids
        wait_for(lambda: cluster.cli("topics", "create", "--bootstrap-server",
                                     f"127.0.0.1:{cluster.nodes[first].port}", "--topic", TOPIC, "--partitions",
                                     "2", "--replication-factor", "3", check=False).returncode == 0,
                 "the topic created (every broker unfenced first)", timeout=120)
        wait_for(lambda: all(len(isr) == 3 for _, _, isr in _described(cluster, first).values()),
                 "both partitions with a full ISR", timeout=120)
        assert cluster.stop(shut_down) == 0  # SIGTERM: a controlled shutdown
        cluster.kill(killed)
        leader = wait_for(lambda: leader_status(cluster), "a quorum leader")["LeaderId"]
        cluster.kill(next(c for c in cluster.controller_ids if c != leader))  # a follower controller, SIGKILL
        described, listed = wait_for(lambda: _settled(cluster, first, {shut_down, killed}),
                                     "both brokers fenced and out of the ISRs", timeout=120)
        for node_id in cluster.nodes:
            cluster.kill(node_id)  # all at once: nothing is written after the tools' answers
    finally:
        cluster.stop_all()
    return {"root": root, "cluster": cluster, "described": described, "listed": listed, "leader": leader}


@pytest.fixture(scope="module")
def summary(spark, run) -> dict:
    return analyze(spark, AnalyzeOptions([str(run["root"])], str(run["root"] / "out")))


def test_every_audit_passes_on_a_real_cluster(summary):
    assert failing(summary) == []
    assert {a["verdict"] for a in summary["audits"].values()} == {"pass"}


def test_image_at_the_hwm_equals_topics_describe_and_brokers_list(summary, run):
    (cluster,) = summary["clusters"]
    assert cluster["clusterId"] == run["cluster"].cluster_id
    image = cluster["image"]
    (topic,) = [t for t in image["topics"] if t["name"] == TOPIC]
    got = {p["partitionId"]: (None if p["leader"] < 0 else p["leader"], p["replicas"], p["isr"])
           for p in topic["partitions"]}
    assert got == run["described"]
    states = {b["brokerId"]: "fenced" if b["fenced"] else "unfenced" for b in image["brokers"]}
    assert states == run["listed"]


def test_image_at_the_hwm_equals_the_controllers_replay(summary, run):
    (cluster,) = summary["clusters"]
    data_dir = run["cluster"].nodes[run["leader"]].data_dir
    assert _image_of(cluster) == _expected_image(replayed(data_dir, committed_offset=cluster["highWatermark"] - 1))
