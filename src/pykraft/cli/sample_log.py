"""`pykraft sample-log`: the metadata log a small cluster writes as it starts, for dump-log demos and tests.

The sequence is what a Kafka 4.x KRaft cluster with three controllers (1, 2, 3) and three brokers (4, 5, 6)
writes: the first leader's start-of-epoch control batch (LeaderChange, KRaftVersion, Voters), the bootstrap
feature levels, controller registrations, broker registrations (fenced) and their unfencing, a topic with three
partitions, a topic config, an ISR shrink, and the active controller's periodic NoOpRecord. A snapshot of the
first batches is written too. Ids come from a fixed seed and timestamps from a fixed clock, so the files are the
same on every run. The files are written by the same code a node uses: `FileLog` and the raft `SnapshotWriter`.
"""

from __future__ import annotations

import random
import shutil
import uuid
from pathlib import Path

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import LeaderChangeMessage
from kio.schema.leader_change_message.v0.data import Voter as LeaderChangeVoter
from kio.schema.voters_record.v0 import VotersRecord
from kio.schema.voters_record.v0.data import Endpoint, KRaftVersionFeature, Voter
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64, u16

from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import VoterSet
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.control import encode_control_batch
from pykraft.records.metadata import (
    BrokerEndpointV3,
    BrokerFeatureV3,
    BrokerRegistrationChangeRecordV2,
    ConfigRecordV0,
    ControllerEndpointV0,
    ControllerFeatureV0,
    FeatureLevelRecordV0,
    NoOpRecordV0,
    PartitionChangeRecordV2,
    PartitionRecordV2,
    RegisterBrokerRecordV3,
    RegisterControllerRecordV0,
    TopicRecordV0,
    encode_metadata_record,
)
from pykraft.records.uuids import random_kafka_uuid
from pykraft.storage import DirectoryLock, open_file_log
from pykraft.storage.files import PARTITION_DIR, snapshot_name

CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
START_MS = 1_760_000_000_000
METADATA_VERSION = 27  # Kafka 4.1's metadata.version level
PLAINTEXT = 0
TOPIC_CONFIG = 2  # ConfigResource.Type.TOPIC


class _LogWriter:
    """Appends batches with consecutive offsets, the way the active controller's log grows."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.next_offset = 0
        self.now_ms = START_MS
        self.batches: list[bytes] = []

    def control(self, *messages: object) -> None:
        self._add(encode_control_batch(messages, base_offset=self.next_offset, partition_leader_epoch=self.epoch,
                                       timestamp_ms=self.now_ms), len(messages))

    def metadata(self, *records: object) -> None:
        values = [SimpleRecord(encode_metadata_record(r)) for r in records]
        self._add(encode_batch(values, base_offset=self.next_offset, partition_leader_epoch=self.epoch,
                               timestamp_ms=self.now_ms), len(values))

    def _add(self, batch: bytes, count: int) -> None:
        self.batches.append(batch)
        self.next_offset += count
        self.now_ms += 25  # append.linger.ms


def _voters_record(directory_ids: dict[int, uuid.UUID]) -> VotersRecord:
    return VotersRecord(
        version=i16(0),
        voters=tuple(
            Voter(
                voter_id=BrokerId(node),
                voter_directory_id=directory_ids[node],
                endpoints=(Endpoint(name="CONTROLLER", host="localhost", port=u16(9092 + node)),),
                k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1)),
            )
            for node in CONTROLLERS
        ),
    )


def _registrations(rng: random.Random, writer: _LogWriter) -> None:
    features = (ControllerFeatureV0(name="metadata.version", min_supported_version=i16(7),
                                    max_supported_version=i16(METADATA_VERSION)),)
    writer.metadata(*(
        RegisterControllerRecordV0(
            controller_id=i32(node), incarnation_id=random_kafka_uuid(rng), zk_migration_ready=False,
            end_points=(ControllerEndpointV0(name="CONTROLLER", host="localhost", port=u16(9092 + node),
                                             security_protocol=i16(PLAINTEXT)),),
            features=features,
        )
        for node in CONTROLLERS
    ))
    broker_epochs = {}
    for node in BROKERS:
        broker_epochs[node] = writer.next_offset  # a broker's epoch is the offset of its registration
        writer.metadata(RegisterBrokerRecordV3(
            broker_id=BrokerId(node), incarnation_id=random_kafka_uuid(rng), broker_epoch=i64(writer.next_offset),
            end_points=(BrokerEndpointV3(name="PLAINTEXT", host="localhost", port=u16(9192 + node),
                                         security_protocol=i16(PLAINTEXT)),),
            features=(BrokerFeatureV3(name="metadata.version", min_supported_version=i16(7),
                                      max_supported_version=i16(METADATA_VERSION)),),
            rack=None, fenced=True, log_dirs=(random_kafka_uuid(rng),),
        ))
    writer.metadata(*(
        BrokerRegistrationChangeRecordV2(broker_id=BrokerId(node), broker_epoch=i64(epoch), fenced=i8(-1))
        for node, epoch in broker_epochs.items()
    ))


def _topic(rng: random.Random, writer: _LogWriter) -> None:
    topic_id = random_kafka_uuid(rng)
    partitions = []
    for partition in range(3):
        replicas = tuple(BrokerId(BROKERS[(partition + i) % len(BROKERS)]) for i in range(3))
        partitions.append(PartitionRecordV2(
            partition_id=i32(partition), topic_id=topic_id, replicas=replicas, isr=replicas, leader=replicas[0],
            leader_epoch=i32(0), partition_epoch=i32(0), directories=(None,) * 3,
            eligible_leader_replicas=None, last_known_elr=None,
        ))
    writer.metadata(
        TopicRecordV0(name=TopicName("orders"), topic_id=topic_id),
        ConfigRecordV0(resource_type=i8(TOPIC_CONFIG), resource_name="orders", name="min.insync.replicas", value="2"),
        *partitions,
    )
    shrunk = tuple(BrokerId(b) for b in partitions[0].isr[:2])
    writer.metadata(PartitionChangeRecordV2(partition_id=i32(0), topic_id=topic_id, isr=shrunk,
                                            replicas=None, removing_replicas=None, adding_replicas=None,
                                            directories=None, eligible_leader_replicas=None, last_known_elr=None))


def build_sample_log(seed: int = 853) -> tuple[list[bytes], int, VotersRecord]:
    """The batches of the sample log, the end offset of its snapshot prefix, and the voter set."""
    rng = random.Random(seed)
    voters_record = _voters_record({node: random_kafka_uuid(rng) for node in CONTROLLERS})
    writer = _LogWriter(epoch=1)
    voters = tuple(LeaderChangeVoter(voter_id=i32(node)) for node in CONTROLLERS)
    writer.control(
        LeaderChangeMessage(version=i16(0), leader_id=BrokerId(1), voters=voters, granting_voters=voters[:2]),
        KRaftVersionRecord(version=i16(0), k_raft_version=i16(1)),
        voters_record,
    )
    writer.metadata(FeatureLevelRecordV0(name="metadata.version", feature_level=i16(METADATA_VERSION)))
    _registrations(rng, writer)
    snapshot_end = writer.next_offset
    _topic(rng, writer)
    writer.metadata(NoOpRecordV0())
    return writer.batches, snapshot_end, voters_record


def snapshot_batches(batches: list[bytes], end_offset: int) -> list[list[bytes]]:
    """The values of the metadata batches below `end_offset`, batch by batch: what a snapshot at `end_offset`
    holds (the log's control records are not state; the snapshot carries KRaftVersion and Voters itself)."""
    out = []
    for raw in batches:
        (batch,) = list(iter_batches(raw))
        if batch.base_offset < end_offset and not batch.is_control:
            out.append([bytes(r.value) for r in batch.records() if r.value is not None])
    return out


def _last_timestamp(batches: list[bytes], end_offset: int) -> int:
    """LastContainedLogTimestamp: the append time of the last batch the snapshot covers."""
    return max(b.max_timestamp for raw in batches for b in iter_batches(raw) if b.base_offset < end_offset)


def _clear_previous_sample(output: Path) -> None:
    """Rerunning replaces the sample (the log would refuse to append at offset 0 again). A formatted node
    directory is never touched: a real metadata log is not ours to delete."""
    if (output / "meta.properties").exists():
        raise FileExistsError(f"{output} is a formatted log directory (it has meta.properties); "
                              f"write the sample somewhere else")
    shutil.rmtree(output / PARTITION_DIR, ignore_errors=True)


def write_sample_log(output: Path) -> list[Path]:
    """Write the sample through `FileLog` (segment, indexes, leader-epoch-checkpoint) and a snapshot at the end
    of the registrations through `SnapshotWriter`. Returns the segment and the snapshot paths."""
    batches, snapshot_end, voters = build_sample_log()
    epoch = 1
    lock = DirectoryLock(str(output))
    try:
        _clear_previous_sample(output)
        log, _ = open_file_log(str(output), lock=lock)
        with log:
            for batch in batches:
                log.append_as_leader(batch, epoch)
            log.flush()
            log.update_high_watermark(log.end_offset())
            snapshot_id = OffsetAndEpoch(snapshot_end, epoch)
            raw = log.create_new_snapshot(snapshot_id)
            assert raw is not None, "the partition directory was cleared"
            timestamp = _last_timestamp(batches, snapshot_end)
            with SnapshotWriter(raw, last_contained_log_time_ms=timestamp, now_ms=timestamp, kraft_version=1,
                                voters=VoterSet.from_voters_record(voters), on_frozen=log.on_snapshot_frozen) as writer:
                for values in snapshot_batches(batches, snapshot_end):
                    writer.append(values)
                writer.freeze()
    finally:
        lock.release()
    partition_dir = output / PARTITION_DIR
    return [partition_dir / f"{0:020d}.log", partition_dir / snapshot_name(snapshot_id.offset, snapshot_id.epoch)]
