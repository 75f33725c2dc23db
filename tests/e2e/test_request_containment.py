"""Issue 12's reproduction with real processes: ElectLeaders v0 (no ElectionType, null partitions) sent to a broker,
which forwards it to the active controller. It used to stop that controller ("node failed", exit 1): two such
requests stopped two controllers of three and left no leader. Now both are answered, every process keeps running,
the quorum keeps its leader, and no server log reports a failed node."""

from __future__ import annotations

import datetime

from kio.schema.delete_topics.v1.request import DeleteTopicsRequest
from kio.schema.elect_leaders.v0 import request as el0
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta

from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.errors import ErrorCode

from .helpers import FAST_TIMEOUTS, leader_status, wait_for
from .metadata_probe import ask


FIVE_SECONDS = i32Timedelta.parse(datetime.timedelta(seconds=5))


def _first_partition_error(answer) -> ErrorCode | None:
    results = answer.replica_election_results
    return ErrorCode(results[0].partition_result[0].error_code) if results else None


def test_elect_leaders_v0_through_a_broker_stops_no_controller(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=3, brokers=1, properties=FAST_TIMEOUTS)
    cluster.format_all()
    cluster.start_all()
    try:
        broker = cluster.nodes[cluster.broker_ids[0]]
        named = el0.ElectLeadersRequest(topic_partitions=(
            el0.TopicPartitions(topic=TopicName("absent"), partitions=(i32(0),)),))
        # Answered by the active controller (not the broker's NOT_CONTROLLER) once the broker knows the leader.
        wait_for(lambda: _first_partition_error(ask(broker, named)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                 "ElectLeaders v0 forwarded to the active controller and answered")
        for _ in range(2):
            assert ask(broker, el0.ElectLeadersRequest(topic_partitions=None)).replica_election_results == ()
        deleted = ask(broker, DeleteTopicsRequest(topic_names=(TopicName("absent"),), timeout=FIVE_SECONDS))
        assert [(r.name, r.error_code) for r in deleted.responses] == [("absent", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        assert all(node.is_running() for node in cluster.nodes.values())
        assert leader_status(cluster, cluster.controller_ids) is not None
        for node_id in cluster.nodes:
            log = cluster.server_log(node_id)
            assert "node failed" not in log and "core task failed" not in log, node_id
    finally:
        cluster.stop_all(timeout=20)
