"""Transaction version 2 (KIP-890 part 2) on the wire, with real processes and the requests a Kafka 4.0 producer
sends once `transaction.version` 2 is finalized (the default of a new cluster): InitProducerId, Produce v12 with
no AddPartitionsToTxn (the partition leader adds the partition through the coordinator), EndTxn v5 whose answer
names the bumped epoch, TxnOffsetCommit v5 with no AddOffsetsToTxn; then read_committed sees the committed
transaction only, a write at the old epoch is fenced, and DescribeTransactions shows the bumped epoch.
(kafka-clients 3.9.1 and librdkafka never send these versions; the interop tier checks them at TV1 and TV2.)
"""

from __future__ import annotations

import asyncio
import datetime
import struct
import time

import pytest
from kio.schema.end_txn.v5 import request as end_req
from kio.schema.find_coordinator.v4 import request as fc_req
from kio.schema.init_producer_id.v5 import request as ip_req
from kio.schema.produce.v12 import request as produce_req
from kio.schema.txn_offset_commit.v5 import request as toc_req
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i64

from pykraft.admin.brokers import BrokerClient, Retry
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord
from pykraft.records.crc import crc32c
from pykraft.records.producer_batch import encode_producer_batch

from .data_plane_checks import bootstrap, partition, start_cluster

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.e2e

PROPERTIES = {"transaction.state.log.num.partitions": "3", "offsets.topic.num.partitions": "3",
              "group.initial.rebalance.delay.ms": "0"}
TXN_ID = "tv2-producer"


def transactional_batch(values: list[bytes], pid: int, epoch: int, sequence: int) -> bytes:
    out = bytearray(encode_producer_batch([SimpleRecord(v, None) for v in values], timestamp_ms=int(time.time() * 1000),
                                          producer_id=pid, producer_epoch=epoch, base_sequence=sequence))
    out[22] |= 0x10  # the transactional attribute
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


class Tv2Client:
    def __init__(self, client: BrokerClient, brokers: dict[int, tuple[str, int]]) -> None:
        self.client, self.brokers = client, brokers

    async def until(self, address, message, ok, what: str, attempts: int = 120):
        for _ in range(attempts):
            try:
                answer = await self.client.exchange(address, message)
            except Retry:
                answer = None
            if answer is not None and ok(answer):
                return answer
            await asyncio.sleep(0.5)
        raise AssertionError(f"{what}: {answer}")

    async def coordinator(self, key: str, key_type: int) -> tuple[str, int]:
        answer = await self.until(next(iter(self.brokers.values())), fc_req.FindCoordinatorRequest(
            key_type=i8(key_type), coordinator_keys=(key,)),
            lambda a: int(a.coordinators[0].error_code) == 0, f"FindCoordinator {key}")
        found = answer.coordinators[0]
        return (found.host, int(found.port))

    async def produce(self, leader, topic: str, batch: bytes) -> ErrorCode:
        answer = await self.client.exchange(leader, produce_req.ProduceRequest(
            transactional_id=TransactionalId(TXN_ID), acks=i16(-1), timeout=datetime.timedelta(seconds=30),
            topic_data=(produce_req.TopicProduceData(name=TopicName(topic), partition_data=(
                produce_req.PartitionProduceData(index=i32(0), records=Records(batch)),)),)))
        return ErrorCode(int(answer.responses[0].partition_responses[0].error_code))

    async def produce_retrying(self, leader, topic: str, batch: bytes) -> ErrorCode:
        """NOT_ENOUGH_REPLICAS is how a leader says "the coordinator is busy" (the previous commit's markers)."""
        for _ in range(60):
            error = await self.produce(leader, topic, batch)
            if error is not ErrorCode.NOT_ENOUGH_REPLICAS:
                return error
            await asyncio.sleep(0.25)
        return error

    async def end(self, coordinator, pid: int, epoch: int, commit: bool):
        return await self.until(coordinator, end_req.EndTxnRequest(
            transactional_id=TransactionalId(TXN_ID), producer_id=ProducerId(pid), producer_epoch=i16(epoch),
            committed=commit), lambda a: int(a.error_code) != ErrorCode.CONCURRENT_TRANSACTIONS, "EndTxn")


def read_all(cluster, topic: str, isolation: str) -> list[str]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": f"reader-{isolation}",
                            "isolation.level": isolation, "enable.auto.commit": False})
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        values, idle = [], 0
        while idle < 6:
            message = consumer.poll(0.5)
            if message is None or message.error():
                idle += 1
                continue
            idle = 0
            values.append(message.value().decode())
        return values
    finally:
        consumer.close()


def test_a_transaction_version_2_producer(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", "tv2", PROPERTIES)
    try:
        features = cluster.cli("features", "--bootstrap-server", bootstrap(cluster).split(",")[0], "describe")
        assert "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2" \
            in features.stdout, features.stdout
        asyncio.run(_run(cluster))
        assert read_all(cluster, "tv2", "read_committed") == ["c1", "c2", "c4"]
        assert read_all(cluster, "tv2", "read_uncommitted") == ["c1", "c2", "a3", "c4"]
        group = ck.Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": "tv2-group",
                             "isolation.level": "read_committed"})
        try:  # the offsets committed in the transaction (TxnOffsetCommit v5, no AddOffsetsToTxn) are the group's now
            assert [tp.offset for tp in group.committed([ck.TopicPartition("tv2", 0)], timeout=30)] == [7]
        finally:
            group.close()
        described = cluster.cli("transactions", "--bootstrap-server", bootstrap(cluster).split(",")[0], "describe",
                                "--transactional-id", TXN_ID)
        assert "CompleteCommit" in described.stdout, described.stdout
    finally:
        cluster.stop_all(timeout=20)


async def _run(cluster) -> None:
    brokers = {b: ("127.0.0.1", cluster.nodes[b].port) for b in cluster.broker_ids}
    async with BrokerClient(list(brokers.values())) as client:
        tv2 = Tv2Client(client, brokers)
        coordinator = await tv2.coordinator(TXN_ID, 1)
        init = await tv2.until(coordinator, ip_req.InitProducerIdRequest(
            transactional_id=TransactionalId(TXN_ID), transaction_timeout=datetime.timedelta(seconds=60),
            producer_id=ProducerId(-1), producer_epoch=i16(-1)), lambda a: int(a.error_code) == 0, "InitProducerId")
        pid, epoch = int(init.producer_id), int(init.producer_epoch)
        leader = brokers[partition(cluster, "tv2").leader]

        # 1: Produce v12 with no AddPartitionsToTxn: the leader adds the partition; EndTxn v5 bumps the epoch.
        assert await tv2.produce_retrying(leader, "tv2", transactional_batch([b"c1", b"c2"], pid, epoch, 0)) \
            is ErrorCode.NONE
        committed = await tv2.end(coordinator, pid, epoch, True)
        assert (int(committed.error_code), int(committed.producer_id), int(committed.producer_epoch)) == \
            (0, pid, epoch + 1)
        retried = await tv2.end(coordinator, pid, epoch, True)  # a retry: the same answer
        assert (int(retried.error_code), int(retried.producer_epoch)) == (0, epoch + 1)
        epoch += 1

        # 2: the next transaction at the bumped epoch (sequence 0 again), aborted.
        assert await tv2.produce_retrying(leader, "tv2", transactional_batch([b"a3"], pid, epoch, 0)) \
            is ErrorCode.NONE
        aborted = await tv2.end(coordinator, pid, epoch, False)
        assert (int(aborted.error_code), int(aborted.producer_epoch)) == (0, epoch + 1)
        # Once the abort is complete (its retry is answered NONE, not CONCURRENT_TRANSACTIONS, only then), a late
        # write of the aborted transaction at its old epoch is fenced by the bumped marker. (Before the marker it
        # would join the aborting transaction, as in Kafka.)
        again = await tv2.end(coordinator, pid, epoch, False)
        assert (int(again.error_code), int(again.producer_epoch)) == (0, epoch + 1)
        assert await tv2.produce(leader, "tv2", transactional_batch([b"late"], pid, epoch, 1)) \
            is ErrorCode.INVALID_PRODUCER_EPOCH
        epoch += 1

        # 3: offsets and a record in one transaction, with no AddOffsetsToTxn (TxnOffsetCommit v5 adds it).
        assert await tv2.produce_retrying(leader, "tv2", transactional_batch([b"c4"], pid, epoch, 0)) \
            is ErrorCode.NONE
        group = await tv2.coordinator("tv2-group", 0)
        offsets = await tv2.until(group, toc_req.TxnOffsetCommitRequest(
            transactional_id=TransactionalId(TXN_ID), group_id=GroupId("tv2-group"), producer_id=ProducerId(pid),
            producer_epoch=i16(epoch), generation_id=i32(-1), member_id="", group_instance_id=None,
            topics=(toc_req.TxnOffsetCommitRequestTopic(name=TopicName("tv2"), partitions=(
                toc_req.TxnOffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(7),
                                                        committed_leader_epoch=i32(-1), committed_metadata=""),)),)),
            lambda a: int(a.topics[0].partitions[0].error_code) not in (ErrorCode.CONCURRENT_TRANSACTIONS,
                                                                         ErrorCode.NOT_ENOUGH_REPLICAS,
                                                                         ErrorCode.COORDINATOR_NOT_AVAILABLE),
            "TxnOffsetCommit")
        assert int(offsets.topics[0].partitions[0].error_code) == 0
        done = await tv2.end(coordinator, pid, epoch, True)
        assert (int(done.error_code), int(done.producer_epoch)) == (0, epoch + 1)
