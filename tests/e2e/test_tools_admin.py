"""The cluster tools against one cluster of three controllers and three brokers started through the CLI:
broker-api-versions, cluster (cluster-id, unregister), leader-election (preferred, unclean, JSON file),
metadata-shell on a live node's directory, and the waits of the admin tools on a dead bootstrap address; each with
Kafka's command lines and output shapes, its effect, and a bad invocation (one line, Kafka's exit status).
"""

from __future__ import annotations

import json
import re

import pytest

from pykraft.node.local_cluster import free_ports

from .helpers import wait_for
from .tools_cluster import brokers, controllers, create_topic, pykraft, start_tools_cluster, stop_cluster, unfenced

TOPIC = "ledger"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_tools_cluster(tmp_path_factory.mktemp("admin") / "cluster", controller_count=3)
    try:
        create_topic(cluster, TOPIC, 3)
        yield cluster
    finally:
        stop_cluster(cluster)


def test_broker_api_versions_prints_every_broker_as_kafka(cluster):
    done = pykraft("broker-api-versions", "--bootstrap-server", brokers(cluster))
    assert done.returncode == 0, done.stderr
    heads = re.findall(r"^127\.0\.0\.1:(\d+) \(id: (\d+) rack: null\) -> \($", done.stdout, re.MULTILINE)
    assert sorted(int(i) for _, i in heads) == cluster.broker_ids
    assert {int(p) for p, _ in heads} == {cluster.nodes[b].port for b in cluster.broker_ids}
    blocks = done.stdout.split(" -> (\n")[1:]
    for block in blocks:
        lines = block.split("\n)")[0].split(",\n")
        assert lines[0].startswith("\tProduce(0): 3 to 12 [usable: ")
        assert "\tFetch(1): 4 to 18 [usable: 18]" in lines and "\tApiVersions(18): 0 to 4 [usable: 4]" in lines
        assert "\tDescribeClientQuotas(48): UNSUPPORTED" in lines  # an API pykraft's brokers do not list
    bad = pykraft("broker-api-versions", "--command-config", "admin.properties")
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr == 'pykraft broker-api-versions: Missing required argument "[bootstrap-server]"\n'


def test_cluster_id_from_a_broker_and_from_the_controllers(cluster):
    for flag, address in (("--bootstrap-server", brokers(cluster)), ("-C", controllers(cluster))):
        done = pykraft("cluster", "cluster-id", flag, address)
        assert done.returncode == 0 and done.stdout == f"Cluster ID: {cluster.cluster_id}\n", done.stderr


def _leaders(cluster) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, replicas) from `topics --describe`."""
    done = pykraft("topics", "--describe", "--bootstrap-server", brokers(cluster), "--topic", TOPIC)
    found = {}
    for line in done.stdout.splitlines():
        match = re.search(r"Partition: (\d+)\tLeader: (\w+)\tReplicas: ([\d,]+)", line)
        if match:
            leader = int(match.group(2)) if match.group(2) != "none" else -1
            found[int(match.group(1))] = (leader, [int(r) for r in match.group(3).split(",")])
    return found


def test_leader_election_preferred_after_a_leader_moved_away(cluster, tmp_path):
    leaders = _leaders(cluster)
    partition = 0
    preferred = leaders[partition][1][0]
    assert leaders[partition][0] == preferred  # a new topic starts on its preferred leaders
    noop = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--election-type", "preferred",
                   "--topic", TOPIC, "--partition", str(partition))
    assert noop.returncode == 0 and noop.stdout == f"Valid replica already elected for partitions {TOPIC}-0\n"
    cluster.stop(preferred, timeout=60)  # controlled shutdown moves its leaderships away
    wait_for(lambda: _leaders(cluster)[partition][0] not in (-1, preferred), "the leadership moved")
    cluster.start(preferred)
    wait_for(lambda: preferred in unfenced(cluster), "the broker back")
    wait_for(lambda: re.search(rf"Partition: {partition}\t.*Isr: [\d,]*{preferred}", pykraft(
        "topics", "--describe", "--bootstrap-server", brokers(cluster), "--topic", TOPIC).stdout),
        "the broker back in the ISR")
    plan = tmp_path / "election.json"
    plan.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": partition}]}))
    done = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--election-type", "PREFERRED",
                   "--path-to-json-file", str(plan))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == f"Successfully completed leader election (PREFERRED) for partitions {TOPIC}-0\n"
    assert _leaders(cluster)[partition][0] == preferred
    every = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--election-type", "preferred",
                    "--all-topic-partitions")
    assert every.returncode == 0 and every.stdout == ""  # nothing left to elect: Kafka prints nothing then


def test_leader_election_bad_invocations(cluster):
    unclean = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--election-type", "unclean",
                      "--topic", TOPIC, "--partition", "1")
    assert unclean.returncode == 0 and unclean.stdout == f"Valid replica already elected for partitions {TOPIC}-1\n"
    unknown = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--election-type", "preferred",
                      "--topic", "nope", "--partition", "0")
    assert unknown.returncode == 1 and unknown.stderr == "1 replica(s) could not be elected\n"
    assert unknown.stdout.startswith("Error completing leader election (PREFERRED) for partition: nope-0: "
                                     "org.apache.kafka.common.errors.UnknownTopicOrPartitionException")
    missing = pykraft("leader-election", "--bootstrap-server", brokers(cluster), "--topic", TOPIC)
    assert missing.returncode == 1 and missing.stderr == "Missing required option(s): election-type\n"


def test_metadata_shell_reads_a_live_nodes_directory(cluster):
    data = cluster.nodes[cluster.controller_ids[0]].data_dir
    done = pykraft("metadata-shell", "--directory", str(data), "ls", "/image/topics/byName", "/image/cluster/brokers")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n\n") == [f"byName:\n{TOPIC}", "brokers:\n" + "\n".join(
        str(b) for b in cluster.broker_ids) + "\n"]
    partition = pykraft("metadata-shell", "-d", str(data), "cat", f"/image/topics/byName/{TOPIC}/0")
    assert partition.stdout.startswith("PartitionRegistration(replicas=[") and "leaderRecoveryState=RECOVERED" in \
        partition.stdout


def test_admin_tools_waiting_on_a_dead_address_say_so_and_keep_their_timeout(cluster):
    (port,) = free_ports(1)
    done = pykraft("topics", "--list", "--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "7000")
    assert done.returncode == 1
    (notice,) = done.stderr.splitlines()  # said once, while waiting; the error itself is Kafka's stdout line
    assert notice.startswith("pykraft: waiting up to ") and notice.endswith(
        f"s for a bootstrap server to answer (127.0.0.1:{port}: connection refused)")
    assert int(notice.split()[4]) <= 7  # the wait announced is the --timeout's, not the 60 s default
    assert done.stdout == (f"Error while executing topic command : cannot reach any bootstrap server "
                           f"(127.0.0.1:{port}: connection refused)\n")


def test_unregister_a_stopped_broker(cluster):
    """Last: the cluster loses a broker for good."""
    unknown = pykraft("cluster", "unregister", "--bootstrap-server", brokers(cluster), "--id", "99")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr == ("org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID 99 is not "
                              "currently registered\n")
    gone = cluster.broker_ids[-1]
    cluster.stop(gone, timeout=60)
    wait_for(lambda: gone not in unfenced(cluster), "the broker fenced")
    done = pykraft("cluster", "unregister", "--bootstrap-server", brokers(cluster), "--id", str(gone))
    assert done.returncode == 0 and done.stdout == f"Broker {gone} is no longer registered.\n", done.stderr
    listed = pykraft("brokers", "list", "--bootstrap-controller", controllers(cluster), "--json")
    assert gone not in [b["id"] for b in json.loads(listed.stdout)]
