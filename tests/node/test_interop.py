"""A stock client against a running controller: kafka-python's admin client bootstraps (ApiVersions, Metadata)
and describes the cluster (DescribeCluster)."""

from __future__ import annotations

import asyncio

import pytest
from kafka.admin import KafkaAdminClient

from pykraft.node.runtime.runtime import NodeRuntime

from .helpers import CLUSTER_ID, free_ports, leader_of, make_config, wait_for


def describe(port: int) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=5000)
    try:
        return admin.describe_cluster()
    finally:
        admin.close()


@pytest.mark.asyncio
async def test_kafka_python_admin_client_describes_the_cluster(tmp_path):
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        # kafka-python blocks: it runs in a thread while the node runs on this loop.
        cluster = await asyncio.get_running_loop().run_in_executor(None, describe, ports[1])
        assert cluster["cluster_id"] == CLUSTER_ID and cluster["controller_id"] == 1
        assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [(1, "127.0.0.1", ports[1])]
        assert runtime.inbound.bad_frames == 0
    finally:
        await runtime.stop()
