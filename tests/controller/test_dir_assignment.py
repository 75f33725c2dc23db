"""AssignReplicasToDirs (KIP-858) on the controller: a broker's replica recorded in a directory, only its own slot
changed, replayed by a standby; Kafka's errors for a stale epoch, unknown topics and partitions, non-replicas."""

from __future__ import annotations

import uuid

from kio.schema.assign_replicas_to_dirs.v0 import request as ar
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i64

from pykraft.controller.controller import ASSIGN_REPLICAS_TO_DIRS
from pykraft.controller.partitions import DIRECTORY_UNASSIGNED
from pykraft.protocol.errors import ErrorCode

from .controller_cluster import Quorum

DIR = uuid.UUID("3c7b6d1e-5f4a-4b2c-9d8e-1f0a2b3c4d5e")


def _request(broker: int, epoch: int, topic_id, partitions: list[int], directory: uuid.UUID = DIR):
    return ar.AssignReplicasToDirsRequest(broker_id=BrokerId(broker), broker_epoch=i64(epoch), directories=(
        ar.DirectoryData(id_=directory, topics=(ar.TopicData(topic_id=topic_id, partitions=tuple(
            ar.PartitionData(partition_index=i32(p)) for p in partitions)),)),))


def _codes(response) -> list[ErrorCode]:
    return [ErrorCode.of(int(p.error_code)) for d in response.directories for t in d.topics for p in t.partitions]


def test_a_replica_is_recorded_in_its_directory_and_a_standby_replays_it() -> None:
    quorum = Quorum()
    quorum.activate(0, now_ms=0)
    quorum.start_brokers(1, 2, 3)
    quorum.create_topic("t", 2, 3)
    topic_id = quorum.active.replication.topics_by_name["t"]
    before = quorum.active.replication.partition(topic_id, 0)
    epoch = quorum.active.cluster.broker_epoch(2)
    response = quorum.request(ASSIGN_REPLICAS_TO_DIRS, _request(2, epoch, topic_id, [0, 5]))
    assert int(response.error_code) == 0 and _codes(response) == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    after = quorum.active.replication.partition(topic_id, 0)
    slot = after.replicas.index(2)
    assert after.directories[slot] == DIR
    assert all(d == b for i, (d, b) in enumerate(zip(after.directories, before.directories)) if i != slot)
    assert after.partition_epoch == before.partition_epoch + 1 and after.leader_epoch == before.leader_epoch
    quorum.sync(1)
    assert quorum.controllers[1].replication.partition(topic_id, 0).directories == after.directories
    # The same assignment again changes nothing.
    written = len(quorum.log)
    quorum.request(ASSIGN_REPLICAS_TO_DIRS, _request(2, epoch, topic_id, [0]))
    assert len(quorum.log) == written


def test_stale_epochs_unknown_topics_and_other_brokers_partitions() -> None:
    quorum = Quorum()
    quorum.activate(0, now_ms=0)
    quorum.start_brokers(1, 2, 3, 4)
    quorum.create_topic("t", 1, 1, assignments=[[1]])
    topic_id = quorum.active.replication.topics_by_name["t"]
    epoch = quorum.active.cluster.broker_epoch(2)
    stale = quorum.request(ASSIGN_REPLICAS_TO_DIRS, _request(2, epoch - 1, topic_id, [0]))
    assert ErrorCode.of(int(stale.error_code)) is ErrorCode.STALE_BROKER_EPOCH
    other = quorum.request(ASSIGN_REPLICAS_TO_DIRS, _request(2, epoch, topic_id, [0]))
    assert _codes(other) == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
    unknown = quorum.request(ASSIGN_REPLICAS_TO_DIRS, _request(2, epoch, uuid.uuid4(), [0]))
    assert _codes(unknown) == [ErrorCode.UNKNOWN_TOPIC_ID]
    assert quorum.active.replication.partition(topic_id, 0).directories == (DIRECTORY_UNASSIGNED,)
