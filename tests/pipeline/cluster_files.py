"""Node directories for the pipeline tests, written with the project's own storage code: the sample start-up
log (`pykraft sample-log`: 3 controllers, 3 brokers, a topic, an ISR shrink, a snapshot) copied to every node of
a cluster, with `meta.properties`, and then changed on purpose (a flipped byte, a divergent tail, a crafted
KIP-841 violation)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from kio.static.primitive import i8, i32, i64

from pykraft.cli.sample_log import START_MS, write_sample_log
from pykraft.controller.log_replay import load_committed
from pykraft.pipeline.replay import new_controller
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecordV2,
    NoOpRecordV0,
    PartitionChangeRecordV2,
    encode_metadata_record,
)
from pykraft.records.uuids import random_kafka_uuid
from pykraft.storage import MetaProperties, open_file_log, write_meta_properties

METADATA_DIR = "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"


def make_cluster(root: Path, cluster_id: str, nodes: tuple[int, ...] = (1, 2, 3)) -> list[Path]:
    """`root/node-N/data` for every node: the same sample log, each with its own meta.properties."""
    rng = random.Random(cluster_id)
    dirs = []
    for node in nodes:
        data = root / f"node-{node}" / "data"
        write_sample_log(data)
        write_meta_properties(str(data), MetaProperties(cluster_id, node, random_kafka_uuid(rng)))
        dirs.append(data)
    return dirs


def append_batch(data: Path, values: list[bytes], epoch: int = 1) -> int:
    """Append one batch through the node's log code; returns its base offset."""
    log, _ = open_file_log(str(data))
    with log:
        base = log.end_offset()
        batch = encode_batch([SimpleRecord(v) for v in values], base_offset=base, partition_leader_epoch=epoch,
                             timestamp_ms=START_MS + 10_000)
        log.append_as_leader(batch, epoch)
        log.flush()
    return base


def end_offset(data: Path) -> int:
    log, _ = open_file_log(str(data))
    with log:
        return log.end_offset()


def segment(data: Path) -> Path:
    return data / METADATA_DIR / SEGMENT


def batch_positions(path: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, size) of every batch of a segment."""
    out, position = [], 0
    for batch in iter_batches(path.read_bytes(), verify_crc=False):
        out.append((position, batch.base_offset, batch.size_in_bytes))
        position += batch.size_in_bytes
    return out


def flip_byte(path: Path, batch_index: int) -> tuple[int, int]:
    """Flip one byte inside the records of one batch; returns (batch position, base offset)."""
    position, base, size = batch_positions(path)[batch_index]
    raw = bytearray(path.read_bytes())
    raw[position + size - 3] ^= 0x5A
    path.write_bytes(bytes(raw))
    return position, base


def replayed(data: Path, committed_offset: int | None = None):
    """The controller's own replay (controller/log_replay.py) of a node's log, up to `committed_offset`."""
    log, _ = open_file_log(str(data))
    with log:
        end = log.end_offset() - 1 if committed_offset is None else committed_offset
        controller = new_controller("replay")
        load_committed(controller, log, end)
    return controller


def divergent_tail(data_dirs: list[Path], follower: Path) -> int:
    """Every node appends a NoOp batch at the same offset under the same epoch, the follower's differing (one
    more record): Raft's log matching broken. Returns the offset."""
    noop = encode_metadata_record(NoOpRecordV0())
    bases = {append_batch(d, [noop] * (3 if d == follower else 2)) for d in data_dirs}
    assert len(bases) == 1
    return bases.pop()


def reassignment_in_progress(data_dirs: list[Path]) -> int:
    """Every node appends the record the controller writes to start removing an in-sync replica from the sample's
    partition whose ISR shrank: the target keeps the out-of-sync replica, so the move stays in progress (removing
    replicas in the image). Returns the offset."""
    from kio.schema.alter_partition_reassignments.v0 import request as alter

    controller = replayed(data_dirs[0])
    topic = next(iter(controller.replication.topics.values()))
    index, shrunk = next((i, p) for i, p in sorted(topic.partitions.items()) if len(p.isr) < len(p.replicas))
    dropped = next(b for b in shrunk.isr if b != shrunk.leader)
    target = tuple(b for b in shrunk.replicas if b != dropped)
    request = alter.AlterPartitionReassignmentsRequest(topics=(alter.ReassignableTopic(name=topic.name, partitions=(
        alter.ReassignablePartition(partition_index=i32(index), replicas=target),)),))
    records = controller.replication.handle_alter_reassignments(request, controller.cluster).records
    assert len(records) == 1 and records[0].removing_replicas == (dropped,)
    bases = {append_batch(d, [encode_metadata_record(r) for r in records]) for d in data_dirs}
    assert len(bases) == 1
    return bases.pop()


def write_history(path: Path, name: str, ops: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for op in ops:
            f.write(json.dumps({"history": name, **op}) + "\n")


def sole_member_then_violation(data_dirs: list[Path]) -> tuple[int, int]:
    """Batch A: broker 5 fenced together with the ISR changes the controller makes for it, partition 1 keeping 5
    as its sole, leaderless member (the allowed exception). Batch B: broker 4 fenced with no ISR change (a
    violation in partitions 0 and 2, which it leads or is in). Returns (offset of A, offset of B)."""
    controller = replayed(data_dirs[0])
    topic = next(iter(controller.replication.topics.values()))
    epochs = {b: r.epoch for b, r in controller.cluster.brokers.items()}

    def change(pid: int, isr: tuple[int, ...], leader: int = -2) -> bytes:
        return encode_metadata_record(PartitionChangeRecordV2(
            partition_id=i32(pid), topic_id=topic.topic_id, isr=tuple(i32(b) for b in isr), leader=i32(leader),
            replicas=None, removing_replicas=None, adding_replicas=None, directories=None,
            eligible_leader_replicas=None, last_known_elr=None))

    def fence(broker: int) -> bytes:
        return encode_metadata_record(BrokerRegistrationChangeRecordV2(
            broker_id=i32(broker), broker_epoch=i64(epochs[broker]), fenced=i8(1)))

    batch_a = [change(0, (4,)), change(1, (5,), leader=-1), change(2, (6, 4)), fence(5)]
    first = {append_batch(d, batch_a) for d in data_dirs}
    second = {append_batch(d, [fence(4)]) for d in data_dirs}
    assert len(first) == len(second) == 1
    return first.pop(), second.pop()
