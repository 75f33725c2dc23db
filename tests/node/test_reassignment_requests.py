"""AlterPartitionReassignments / ListPartitionReassignments over TCP on in-process controllers: advertised, answered
by the active controller only, REQUEST_TIMED_OUT when the controller cannot start the request within its timeout,
the `__cluster_metadata` entries answered by the node's QuorumReassignments seam, merged in the request's order."""

from __future__ import annotations

import datetime

import pytest

from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.api_versions.v3 import request as av_req
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.controller.reassignments import QUORUM_TOPIC
from pykraft.protocol.errors import ErrorCode

from .helpers import call
from .test_controller_host import active_controller, start_cluster, stop_all


def alter(module, timeout_ms: int, *topics: tuple[str, list[int] | None]):
    entries = tuple(module.ReassignableTopic(name=TopicName(name), partitions=(module.ReassignablePartition(
        partition_index=i32(0), replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas)),))
        for name, replicas in topics)
    return module.AlterPartitionReassignmentsRequest(timeout=datetime.timedelta(milliseconds=timeout_ms),
                                                     topics=entries)


def codes(response) -> list[tuple[str, int, str | None]]:
    return [(t.name, int(p.error_code), p.error_message) for t in response.responses for p in t.partitions]


@pytest.mark.asyncio
async def test_reassignment_requests_over_the_wire(tmp_path):
    ports, runtimes = await start_cluster(tmp_path)
    try:
        leader = await active_controller(runtimes)
        port = ports[leader.config.node_id]
        follower_port = next(p for i, p in ports.items() if i != leader.config.node_id)
        versions = {int(k.api_key): (int(k.min_version), int(k.max_version))
                    for k in (await call(port, av_req.ApiVersionsRequest(client_software_name="t",
                                                                           client_software_version="1"))).api_keys}
        assert versions[45] == (0, 1) and versions[46] == (0, 0)

        mixed = alter(alter_v1, 30_000, ("nope", [1]), (QUORUM_TOPIC, [1, 2, 3]), ("nope", None))
        answer = await call(port, mixed)
        assert int(answer.error_code) == 0
        assert codes(answer) == [("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope."),
                                 # static voters (kraft.version 0): the raft core cannot move them
                                 (QUORUM_TOPIC, ErrorCode.UNSUPPORTED_VERSION,
                                  "kraft.version 0 keeps the voters in configuration: upgrade kraft.version to 1 first"),
                                 ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")]

        v0 = await call(port, alter(alter_v0, 30_000, ("nope", [1])))
        assert codes(v0) == [("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")]

        # A deadline already passed when the core reaches the request: never run, answered REQUEST_TIMED_OUT.
        timed_out = await call(port, alter(alter_v1, 0, ("nope", [1])))
        assert int(timed_out.error_code) == ErrorCode.REQUEST_TIMED_OUT
        assert [c for _, c, _ in codes(timed_out)] == [ErrorCode.REQUEST_TIMED_OUT]

        refused = await call(follower_port, alter(alter_v1, 30_000, ("nope", [1])))
        assert int(refused.error_code) == ErrorCode.NOT_CONTROLLER
        assert [c for _, c, _ in codes(refused)] == [ErrorCode.NOT_CONTROLLER]

        listing = await call(port, list_v0.ListPartitionReassignmentsRequest(topics=None))
        assert (int(listing.error_code), listing.topics) == (0, ())
        named = list_v0.ListPartitionReassignmentsRequest(topics=(list_v0.ListPartitionReassignmentsTopics(
            name=TopicName("nope"), partition_indexes=(i32(0),)),))
        not_here = await call(follower_port, named)
        assert int(not_here.error_code) == ErrorCode.NOT_CONTROLLER
        assert [(t.name, [int(p.partition_index) for p in t.partitions]) for t in not_here.topics] == [("nope", [0])]
    finally:
        await stop_all(runtimes)
