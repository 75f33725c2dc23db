"""The admin client and the CLI against real in-process nodes on 127.0.0.1 (NodeRuntime over net).

A dynamic quorum: controller 1 formatted --standalone, controller 2 formatted --no-initial-controllers and started as
an observer of it. The admin client adds 2 as a voter, sees it in DescribeQuorum, removes it again; the CLI runs in a
separate process against the same nodes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminError
from pykraft.cli.quorum_output import replication_table, status_text
from pykraft.node.config.node_config import NodeConfig, parse_config
from pykraft.node.local_cluster import free_ports
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode
from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.format import FormatRequest, format_directories
from pykraft.storage.format_options import QuorumFlag
from pykraft.storage.meta_properties import read_meta_properties

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def write_config(tmp: Path, node_id: int, port: int, bootstrap_port: int) -> Path:
    data = tmp / f"node-{node_id}"
    path = tmp / f"controller-{node_id}.properties"
    path.write_text("\n".join([
        "process.roles=controller", f"node.id={node_id}", f"listeners=CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER", f"controller.quorum.bootstrap.servers=127.0.0.1:{bootstrap_port}",
        f"metadata.log.dir={data}", f"log.dirs={data}", "controller.quorum.election.timeout.ms=300",
        "controller.quorum.fetch.timeout.ms=1000", "controller.quorum.request.timeout.ms=500",
        "controller.quorum.append.linger.ms=1",
        # the admin client reads these from the same file when it is given as --command-config
        "default.api.timeout.ms=20000", "request.timeout.ms=5000", "retry.backoff.ms=20",
    ]) + "\n")
    return path


def format_node(config: NodeConfig, flag: QuorumFlag) -> None:
    format_directories(FormatRequest(
        cluster_id=CLUSTER_ID, node_id=config.node_id, is_controller=True, log_dirs=config.log_dirs,
        metadata_log_dir=config.metadata_log_dir, has_static_voters=False, controller_listener_name="CONTROLLER",
        controller_endpoints=config.advertised_controller_endpoints(), quorum_flag=flag), out=lambda _line: None)


async def eventually(check, *, timeout_s: float = 20.0):
    """Poll an async check until it returns a truthy value (a liveness bound, not a timing assertion)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.05)


@pytest.mark.asyncio
async def test_add_describe_and_remove_a_controller_against_real_nodes(tmp_path: Path):
    port1, port2 = free_ports(2)
    paths = {1: write_config(tmp_path, 1, port1, port1), 2: write_config(tmp_path, 2, port2, port1)}
    configs = {i: parse_config(p.read_text()) for i, p in paths.items()}
    format_node(configs[1], QuorumFlag.STANDALONE)
    format_node(configs[2], QuorumFlag.NO_INITIAL_CONTROLLERS)
    dir2 = read_meta_properties(configs[2].metadata_log_dir).directory_id
    runtimes = [NodeRuntime(configs[1]), NodeRuntime(configs[2])]
    for runtime in runtimes:
        await runtime.start()
    client = AdminClient([("127.0.0.1", port2), ("127.0.0.1", port1)], deadline_ms=20_000, request_timeout_ms=5000,
                         retry_backoff_ms=20)
    try:
        # The observer is listed once it fetches from the leader; the bootstrap list starts with the observer, so
        # the leader is found through DescribeCluster on a non-leader.
        info = await eventually(lambda: _with_observer(client, 2))
        assert info.leader_id == 1 and [v.replica_id for v in info.voters] == [1]
        assert (await client.describe_cluster()).cluster_id == CLUSTER_ID
        features = await client.describe_features()
        assert features.finalized["kraft.version"].max_version_level == 1

        await client.add_voter(2, dir2, configs[2].advertised_controller_endpoints())
        info = await client.describe_quorum()
        assert sorted(v.replica_id for v in info.voters) == [1, 2]
        assert next(v for v in info.voters if v.replica_id == 2).directory_id == dir2
        text = status_text(CLUSTER_ID, info)
        assert f'{{"id": 2, "directoryId": "{uuid_to_kafka_str(dir2)}", "endpoints": ["CONTROLLER://127.0.0.1:{port2}"]}}' in text

        with pytest.raises(AdminError) as caught:  # non-idempotent automation retrying an add (pain point 12)
            await client.add_voter(2, dir2, configs[2].advertised_controller_endpoints())
        assert caught.value.code is ErrorCode.DUPLICATE_VOTER

        rows = replication_table(info).splitlines()
        assert rows[1].split("\t")[6].strip() == "Leader" and rows[1].split("\t")[0].strip() == "1"
        assert rows[2].split("\t")[6].strip() == "Follower" and rows[2].split("\t")[1].strip() == uuid_to_kafka_str(dir2)

        # The CLI as a separate process (the console script's entry point), against the same nodes; its admin
        # settings come from the controller's own properties file.
        code, stdout, stderr = await cli("--bootstrap-controller", f"127.0.0.1:{port1}", "--command-config",
                                         str(paths[1]), "remove-controller", "-i", "2", "-d", uuid_to_kafka_str(dir2))
        assert code == 0, stderr
        assert stdout == f"Removed KRaft controller 2 with directory id {uuid_to_kafka_str(dir2)}\n"
        info = await client.describe_quorum()
        assert [v.replica_id for v in info.voters] == [1]
    finally:
        await client.close()
        for runtime in runtimes:
            await runtime.stop()


async def cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pykraft.cli.main", "metadata-quorum", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    stdout, stderr = await process.communicate()
    return process.returncode, stdout.decode(), stderr.decode()


async def _with_observer(client: AdminClient, node_id: int):
    info = await client.describe_quorum()
    return info if any(o.replica_id == node_id for o in info.observers) else None
