"""Shared helpers for the node tests: free ports, configs with short timeouts, hand-formatted directories, and a
tiny client that speaks our own codec over the net layer's Connection."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path
from typing import Any

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.net.client import Connection
from pykraft.node.config.node_config import NodeConfig, parse_config
from pykraft.node.local_cluster import free_ports  # noqa: F401 - re-exported to the node tests
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.raft.config import METADATA_TOPIC
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage import MetaProperties, write_meta_properties

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def config_text(node_id: int, ports: dict[int, int], data_dir: Path, *, extra: str = "") -> str:
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in sorted(ports.items()))
    return "\n".join([
        "process.roles=controller",
        f"node.id={node_id}",
        f"listeners=CONTROLLER://127.0.0.1:{ports[node_id]}",
        "controller.listener.names=CONTROLLER",
        f"controller.quorum.voters={voters}",
        f"metadata.log.dir={data_dir}",
        f"log.dirs={data_dir}",
        "controller.quorum.election.timeout.ms=300",
        "controller.quorum.fetch.timeout.ms=1500",
        "controller.quorum.request.timeout.ms=1000",  # above the 500 ms fetch long-poll
        "controller.quorum.append.linger.ms=1",
        "pykraft.produce.enable=true",
        extra,
    ]) + "\n"


def format_dir(data_dir: Path, node_id: int, cluster_id: str = CLUSTER_ID) -> None:
    write_meta_properties(str(data_dir), MetaProperties(cluster_id, node_id, uuid.uuid4()))


def make_config(tmp: Path, node_id: int, ports: dict[int, int], *, extra: str = "",
                format_storage: bool = True) -> NodeConfig:
    data_dir = tmp / f"node-{node_id}"
    data_dir.mkdir(parents=True, exist_ok=True)
    if format_storage and not (data_dir / "meta.properties").exists():
        format_dir(data_dir, node_id)
    return parse_config(config_text(node_id, ports, data_dir, extra=extra))


def produce_request(values: list[bytes], *, acks: int = -1, topic: str = METADATA_TOPIC) -> ProduceRequest:
    batch = encode_batch([SimpleRecord(value=v) for v in values], base_offset=0, partition_leader_epoch=-1,
                         timestamp_ms=0)
    return ProduceRequest(
        transactional_id=None, acks=i16(acks), timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        topic_data=(TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=i32(0),
                                                                                     records=batch),)),))


async def call(port: int, message: Any, *, timeout_ms: int = 5000) -> Any:
    """One request over a fresh connection, decoded with our codec."""
    connection = await Connection.open("127.0.0.1", port)
    try:
        payload = await connection.request(
            lambda cid: encode_request(message, correlation_id=cid, client_id="test")[4:], timeout_ms=timeout_ms)
        return decode_response(payload, int(message.__api_key__), int(message.__version__)).message
    finally:
        await connection.close()


async def wait_for(predicate, *, timeout_s: float = 10.0, interval_s: float = 0.01) -> None:
    """Poll until `predicate()` is true; fail the test if it never becomes true (a liveness bound, not a timing
    assertion: the bound is far above what the behaviour needs)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(interval_s)


def leader_of(runtimes: list[NodeRuntime]) -> NodeRuntime | None:
    leaders = [r for r in runtimes if r.started_core is not None and r.core.leader_state() is not None
               and r.core.high_watermark is not None]
    return leaders[0] if len(leaders) == 1 else None
