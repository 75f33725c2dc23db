"""Each kind of listener offers its own APIs, as Kafka's listeners do (the schemas' "listeners" field): a broker
listener no controller RPC (Vote, BeginQuorumEpoch, BrokerRegistration, AlterPartition, ...), a controller listener
no data plane and no group coordinator, a combined node each on its own listener; and the requests Kafka refuses
are refused: a Vote on a broker listener closes the connection (it is not offered), a Produce to a topic on a
controller answers UNKNOWN_TOPIC_OR_PARTITION. In-process nodes: a controller, a broker, a combined node."""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.vote.v2.request import VoteRequest
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.net.errors import NetError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch

from .helpers import call
from .test_protocol_fuzz import _brokers_running, _start

CONTROLLER_ONLY = {ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.FETCH_SNAPSHOT,
                   ApiKey.UPDATE_RAFT_VOTER, ApiKey.ALTER_PARTITION, ApiKey.BROKER_REGISTRATION,
                   ApiKey.BROKER_HEARTBEAT}
BROKER_ONLY = {ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_COMMIT,
               ApiKey.INIT_PRODUCER_ID}


@pytest.fixture(scope="module")
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="listener-apis", daemon=True)
    thread.start()

    def run(coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    runtimes, found = run(_start(tmp_path_factory.mktemp("listener-apis")))

    async def ready() -> None:
        while not _brokers_running(runtimes):
            await asyncio.sleep(0.05)

    try:
        run(asyncio.wait_for(ready(), 60))
        yield found
    finally:
        for runtime in runtimes.values():
            run(runtime.stop(graceful=False))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def offered(port: int) -> set[int]:
    answer = asyncio.run(call(port, ApiVersionsRequest(client_software_name="t", client_software_version="1")))
    assert answer.error_code == ErrorCode.NONE
    return {int(k.api_key) for k in answer.api_keys}


@pytest.mark.parametrize("listener", ["broker", "combined-broker"])
def test_a_broker_listener_offers_no_controller_rpc(ports, listener):
    apis = offered(ports[listener])
    assert not apis & CONTROLLER_ONLY, sorted(ApiKey(k).name for k in apis & CONTROLLER_ONLY)
    assert BROKER_ONLY <= apis and ApiKey.DESCRIBE_QUORUM in apis and ApiKey.METADATA in apis


@pytest.mark.parametrize("listener", ["controller", "combined-controller"])
def test_a_controller_listener_offers_no_data_plane_or_group_api(ports, listener):
    apis = offered(ports[listener])
    assert not apis & BROKER_ONLY, sorted(ApiKey(k).name for k in apis & BROKER_ONLY)
    assert CONTROLLER_ONLY <= apis


def test_a_combined_nodes_listeners_each_offer_what_the_single_role_nodes_offer(ports):
    assert offered(ports["combined-controller"]) == offered(ports["controller"])
    assert offered(ports["combined-broker"]) == offered(ports["broker"])


def test_a_vote_on_a_broker_listener_closes_the_connection(ports):
    vote = VoteRequest(cluster_id=None, voter_id=i32(2), topics=())
    with pytest.raises(NetError):
        asyncio.run(call(ports["broker"], vote))
    assert offered(ports["broker"])  # the broker serves on


@pytest.mark.parametrize("listener", ["controller", "combined-controller"])
def test_produce_to_a_topic_on_a_controller_listener_is_unknown_topic(ports, listener):
    batch = encode_batch([SimpleRecord(value=b"v")], base_offset=0, partition_leader_epoch=-1, timestamp_ms=0)
    request = ProduceRequest(transactional_id=None, acks=i16(-1),
                             timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
                             topic_data=(TopicProduceData(name="orders", partition_data=(
                                 PartitionProduceData(index=i32(0), records=batch),)),))
    answer = asyncio.run(call(ports[listener], request))
    partition = answer.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
