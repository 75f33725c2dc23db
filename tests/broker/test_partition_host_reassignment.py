"""A reassignment as the brokers' partition hosts (node/hosts/partitions.py) live it, with the controller's own
records: the new replica's broker creates it and fetches from the leader, the leader accepts and counts the new
follower within its epoch and proposes it for the ISR, and once the move completes the removed broker deletes its
replica directory while the new one holds the leader's records."""

from __future__ import annotations

import asyncio
import random

from kio.schema.alter_partition_reassignments.v0 import request as alter_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.isr_rules import ProposalKind
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.controller.replication import ReplicationControl
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.storage import PartitionLogs

from .records import TOPIC_ID, isr_change, partition, register, topic
from .test_partition_host import NOW, _fetch, _records


class Broker:
    def __init__(self, tmp_path, me: int, records: list) -> None:
        self.cache = MetadataCache()
        self.cache.replay_all(enumerate(records))
        self.isr = IsrManager(IsrManagerConfig(me), self.cache)
        self.isr.sync_metadata(NOW)
        self.host = PartitionHost(DataPlaneSettings(me, TopicSettings()), self.cache, None,
                                  report_progress=lambda p: self.isr.update_progress(p, NOW),
                                  high_watermark_of=self.isr.high_watermark)
        self.directory = tmp_path / f"b{me}"
        self.host.logs = PartitionLogs((str(self.directory),), self.host.log_config_for)
        self.sources = self.host.sync_metadata(NOW)

    def replay(self, offset: int, records: list) -> None:
        self.cache.replay_all(enumerate(records, start=offset))
        self.isr.sync_metadata(NOW)
        self.sources = self.host.sync_metadata(NOW)


def _reassign(replicas: list[int]):
    return alter_req.AlterPartitionReassignmentsRequest(topics=(alter_req.ReassignableTopic(
        name=TopicName("t"), partitions=(alter_req.ReassignablePartition(
            partition_index=i32(0), replicas=tuple(BrokerId(b) for b in replicas)),)),))


def test_a_moved_replica_is_created_fetched_counted_and_the_removed_one_deleted(tmp_path) -> None:
    async def scenario() -> None:
        log = [*(register(b, 10 + b) for b in (1, 2, 3, 4)), topic("t"), partition(0, [1, 2, 3], [1, 2, 3], 1)]
        control = ReplicationControl(random.Random(1))
        for record in log[4:]:
            control.replay(record)
        leader, newcomer = Broker(tmp_path, 1, log), Broker(tmp_path, 4, log)
        assert ("t", 0) not in newcomer.host.replicas
        leader.host.append_as_leader("t", 0, _records(3), acks=1)
        for follower in (2, 3):
            _fetch(leader.host, follower, 3)

        started = control.handle_alter_reassignments(_reassign([2, 3, 4]), leader.cache.cluster).records
        for record in started:
            control.replay(record)
        for broker in (leader, newcomer):
            broker.replay(len(log), list(started))
        log += started
        assert leader.host.replicas[("t", 0)].leading.replicas == (2, 3, 4, 1)
        assert newcomer.sources == {1: [("t", 0)]}  # its replica exists and follows broker 1
        replica = newcomer.host.replicas[("t", 0)]
        fetched = _fetch(leader.host, 4, 0)
        newcomer.host.append_as_follower(replica, fetched.records, fetched.high_watermark, fetched.log_start_offset)
        assert replica.log.end_offset() == 3
        _fetch(leader.host, 4, 3)
        proposal = leader.isr.proposal((TOPIC_ID, 0))
        assert proposal is not None and proposal.kind is ProposalKind.EXPAND and proposal.isr == (1, 2, 3, 4)

        # The controller accepts the expansion: it completes the move and elects 2 (1 is being removed).
        p = control.partition(TOPIC_ID, 0)
        done = control.handle_alter_partition(_alter(p, (1, 2, 3, 4)), 3, leader.cache.cluster).records
        for broker in (leader, newcomer):
            broker.replay(len(log), list(done))
        assert ("t", 0) not in leader.host.replicas
        assert not (leader.directory / "t-0").exists()
        assert not [d for d in leader.directory.iterdir() if d.name.endswith("-delete")]
        moved = newcomer.host.replicas[("t", 0)]
        assert (moved.leader_id, moved.leader_epoch) == (2, 1) and newcomer.sources == {2: [("t", 0)]}
        assert bytes(moved.log.read(0, 1 << 20).records) == bytes(fetched.records)
        newcomer.host.close()
        leader.host.close()

    asyncio.run(scenario())


def test_replicas_added_without_removal_are_adopted_within_the_epoch(tmp_path) -> None:
    async def scenario() -> None:
        log = [*(register(b, 10 + b) for b in (1, 2)), topic("t"), partition(0, [1], [1], 1)]
        leader = Broker(tmp_path, 1, log)
        control = ReplicationControl(random.Random(1))
        for record in log[2:]:
            control.replay(record)
        started = control.handle_alter_reassignments(_reassign([1, 2]), leader.cache.cluster).records
        leader.replay(len(log), list(started))
        state = leader.host.replicas[("t", 0)]
        assert state.leading is not None and state.leading.replicas == (1, 2) and state.leader_epoch == 0
        _fetch(leader.host, 2, 0)
        assert leader.isr.proposal((TOPIC_ID, 0)).isr == (1, 2)  # the new follower caught up (empty log)
        leader.replay(len(log) + len(started), [isr_change(0, [1, 2])])
        leader.host.close()

    asyncio.run(scenario())


def _alter(p, isr):
    from kio.schema.alter_partition.v3 import request as ap
    from kio.static.primitive import i64

    return ap.AlterPartitionRequest(broker_id=BrokerId(p.leader), broker_epoch=i64(10 + p.leader), topics=(
        ap.TopicData(topic_id=TOPIC_ID, partitions=(ap.PartitionData(
            partition_index=i32(0), leader_epoch=i32(p.leader_epoch), partition_epoch=i32(p.partition_epoch),
            new_isr_with_epochs=tuple(ap.BrokerState(broker_id=BrokerId(b), broker_epoch=i64(-1)) for b in isr),
            leader_recovery_state=0),)),))
