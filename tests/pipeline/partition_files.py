"""Brokers' partition logs for the pipeline tests: the sample cluster's metadata (cluster_files.make_cluster:
controllers 1-3, brokers 4-6, topic `orders` with 3 partitions) plus the brokers' own data directories holding
`orders-N` replicas of idempotent producer batches, `__consumer_offsets-0` with a group's commits, the offset
checkpoint files, a produce history and a broker trace; and the faults planted in them (a flipped byte, a
divergent tail, a duplicated idempotent batch, an acknowledged batch removed from every replica, a committed
offset moving backwards, a fenced broker in a leader's ISR view).

Segments are written as bytes (Kafka's batch format, records/batch.py), so that a log can start above 0 and have
the holes the log cleaner leaves: what the readers must take as they come."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.batch import ATTR_TRANSACTIONAL
from pykraft.records import consumer_group_records as cg
from pykraft.records.client_history import PRODUCE_HISTORY_FILE, ProduceHistory
from pykraft.records.crc import crc32c
from pykraft.records.group_records import (GroupKey, GroupValue, OffsetKey, OffsetValue, encode_group_value,
                                           encode_key, encode_offset_value)
from pykraft.records.txn_log_records import TxnLogValue, encode_txn_key, encode_txn_value
from pykraft.records.txn_markers import encode_txn_marker_batch
from pykraft.storage import MetaProperties, write_meta_properties
from pykraft.storage.offset_checkpoints import encode_offsets
from pykraft.storage.txn_index import AbortedTxn, encode_entries, txn_index_name

from .cluster_files import START_MS, make_cluster, replayed

TOPIC = "orders"
BROKERS = (4, 5, 6)
LEADERS = {0: 4, 1: 5, 2: 6}  # the sample log's leaders; partition 0's ISR is shrunk to (4, 5)
BATCHES = 12
PER_BATCH = 3
PRODUCER_ID = {0: 1000, 1: 1001, 2: 1002}
_PRODUCER_AT = 43  # producer id (int64), epoch (int16), base sequence (int32) in the batch header


def with_producer(batch: bytes, producer_id: int, producer_epoch: int, sequence: int, *,
                  transactional: bool = False) -> bytes:
    """The batch with its producer fields set (and the transactional attribute), its CRC fixed."""
    out = bytearray(batch)
    struct.pack_into(">qhi", out, _PRODUCER_AT, producer_id, producer_epoch, sequence)
    if transactional:
        struct.pack_into(">h", out, 21, struct.unpack_from(">h", out, 21)[0] | ATTR_TRANSACTIONAL)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def idempotent_batch(values: list[bytes], keys: list[bytes], base_offset: int, epoch: int, producer_id: int,
                     sequence: int) -> bytes:
    batch = encode_batch([SimpleRecord(v, key=k) for v, k in zip(values, keys)], base_offset=base_offset,
                         partition_leader_epoch=epoch, timestamp_ms=START_MS + 5_000 + base_offset)
    return with_producer(batch, producer_id, 0, sequence)


@dataclass
class Replica:
    """One replica's segment, as batches (base offset -> bytes), written by `write`."""

    base: int = 0  # the segment's base offset (its file name)
    batches: dict[int, bytes] = field(default_factory=dict)

    def data(self) -> bytes:
        return b"".join(self.batches[b] for b in sorted(self.batches))

    def end(self) -> int:
        last = max(self.batches)
        return last + next(iter(iter_batches(self.batches[last], verify_crc=False))).last_offset_delta + 1

    def position(self, base_offset: int) -> int:
        return sum(len(self.batches[b]) for b in sorted(self.batches) if b < base_offset)


@dataclass
class Scene:
    root: Path
    cluster_id: str
    logs: dict[tuple[int, int], Replica]  # (broker, partition) -> replica
    acked: list[tuple[int, int, bytes]]  # (partition, offset, value)
    log_start: dict[int, int] = field(default_factory=dict)  # partition -> log start offset (checkpointed)
    aborted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # partition -> aborted txn spans

    def data(self, broker: int) -> Path:
        return self.root / f"node-{broker}" / "data"

    def segment(self, broker: int, partition: int) -> str:
        return f"{TOPIC}-{partition}/{self.logs[(broker, partition)].base:020d}.log"


def build(root: Path, cluster_id: str) -> Scene:
    """A clean cluster. Partition 1's log starts at offset 100 (a DeleteRecords moved its start to 103, the
    checkpoint says so); broker 4's copy of partition 2 was compacted: records whose key comes again later are
    gone (holes in its offsets)."""
    make_cluster(root, cluster_id)
    logs: dict[tuple[int, int], Replica] = {}
    acked = []
    scene = Scene(root, cluster_id, logs, acked, {1: 103})
    for partition in range(3):
        base = 100 if partition == 1 else 0
        batches = {}
        for i in range(BATCHES):
            offset = base + i * PER_BATCH
            values = [f"p{partition}-v{offset + j}".encode() for j in range(PER_BATCH)]
            keys = [f"k{(offset + j) % 5}".encode() for j in range(PER_BATCH)]
            batches[offset] = idempotent_batch(values, keys, offset, 1, PRODUCER_ID[partition], i * PER_BATCH)
            acked += [(partition, offset + j, v) for j, v in enumerate(values)]
        for broker in BROKERS:
            logs[(broker, partition)] = Replica(base, dict(batches))
    compacted = logs[(4, 2)]
    first = compacted.batches[0]  # keys k0 k1 k2, all of which come again later
    compacted.batches[0] = _keep_last_record(first)
    write_all(scene)
    return scene


def _keep_last_record(batch: bytes) -> bytes:
    """What the log cleaner leaves of a batch whose first records' keys come again: the last record only, at its
    own offset, the batch's base offset and producer fields kept (Kafka keeps them for the producer state)."""
    parsed = next(iter(iter_batches(batch, verify_crc=False)))
    records = list(parsed.records())
    last = records[-1]
    out = bytearray(encode_batch([SimpleRecord(bytes(last.value), key=bytes(last.key))],
                                 base_offset=last.offset, partition_leader_epoch=parsed.partition_leader_epoch,
                                 timestamp_ms=last.timestamp))
    struct.pack_into(">qhi", out, _PRODUCER_AT, parsed.producer_id, parsed.producer_epoch,
                     parsed.base_sequence + len(records) - 1)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[21:]))
    return bytes(out)


def write_all(scene: Scene, history: bool = True) -> None:
    for broker in BROKERS:
        data = scene.data(broker)
        data.mkdir(parents=True, exist_ok=True)
        write_meta_properties(str(data), MetaProperties(scene.cluster_id, broker, None))
        hwm, start = {}, {}
        for partition in range(3):
            replica = scene.logs[(broker, partition)]
            folder = data / f"{TOPIC}-{partition}"
            folder.mkdir(exist_ok=True)
            for old in folder.glob("*.log"):
                old.unlink()
            (folder / f"{replica.base:020d}.log").write_bytes(replica.data())
            hwm[(TOPIC, partition)] = replica.end()
            start[(TOPIC, partition)] = scene.log_start.get(partition, replica.base)
        (data / "replication-offset-checkpoint").write_bytes(encode_offsets(hwm))
        (data / "log-start-offset-checkpoint").write_bytes(encode_offsets(start))
    if history:
        path = scene.root / PRODUCE_HISTORY_FILE
        path.unlink(missing_ok=True)
        with ProduceHistory(str(path), "test") as h:
            for partition, offset, value in scene.acked:
                h.acked(TOPIC, partition, offset, value)
            h.failed(TOPIC, b"never-answered")


def group_log(scene: Scene, commits: list[int]) -> None:
    """`__consumer_offsets-0` on every broker: group `g` in generation 1, then its commits for orders-0."""
    records = [SimpleRecord(encode_group_value(GroupValue("consumer", 1, "range", "m1", START_MS, ())),
                            key=encode_key(GroupKey("g")))]
    records += [SimpleRecord(encode_offset_value(OffsetValue(c, 1, "", START_MS + i)),
                             key=encode_key(OffsetKey("g", TOPIC, 0))) for i, c in enumerate(commits)]
    data = encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=START_MS + 9_000)
    for broker in BROKERS:
        folder = scene.data(broker) / "__consumer_offsets-0"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{0:020d}.log").write_bytes(data)


TXN_PRODUCER = 3000


def transactions(scene: Scene, partition: int = 0) -> dict[str, list[int]]:
    """Transactions at the end of `orders-<partition>` on every replica, as a transactional producer leaves them:
    an aborted transaction, the same values resent and committed in the producer's next epoch, and an aborted
    transaction whose record the log cleaner removed (its ABORT marker and the replicas' `.txnindex` entries
    remain). The history says what the producer was told: acked for the committed values and for the removed
    record (its answer came before the abort). Call before `write_all`; `write_txn_index` after it."""
    end = scene.logs[(BROKERS[0], partition)].end()
    values = [b"tx-1", b"tx-2"]

    def data(at: int, epoch: int, chunk: list[bytes]) -> bytes:
        batch = encode_batch([SimpleRecord(v) for v in chunk], base_offset=at, partition_leader_epoch=1,
                             timestamp_ms=START_MS + 6_000 + at)
        return with_producer(batch, TXN_PRODUCER, epoch, 0, transactional=True)

    def marker(at: int, epoch: int, commit: bool) -> bytes:
        return encode_txn_marker_batch(TXN_PRODUCER, epoch, 0, commit, timestamp_ms=START_MS + 6_000 + at,
                                       base_offset=at, partition_leader_epoch=1)

    batches = {end: data(end, 0, values), end + 2: marker(end + 2, 0, False),
               end + 3: data(end + 3, 1, values), end + 5: marker(end + 5, 1, True),
               end + 7: marker(end + 7, 2, False)}  # end + 6: the cleaned record of epoch 2
    for broker in BROKERS:
        scene.logs[(broker, partition)].batches.update(batches)
    scene.acked += [(partition, end + 3, values[0]), (partition, end + 4, values[1]), (partition, end + 6, b"tx-gone")]
    scene.aborted[partition] = [(end, end + 2), (end + 6, end + 7)]
    return {"aborted": [end, end + 1], "committed": [end + 3, end + 4], "cleaned": [end + 6]}


def write_txn_index(scene: Scene) -> None:
    for broker in BROKERS:
        for partition, spans in scene.aborted.items():
            entries = [AbortedTxn(TXN_PRODUCER, first, last, first) for first, last in spans]
            folder = scene.data(broker) / f"{TOPIC}-{partition}"
            (folder / txn_index_name(scene.logs[(broker, partition)].base)).write_bytes(encode_entries(entries))


def kip848_group_log(scene: Scene) -> None:
    """Appended to `__consumer_offsets-0` after `group_log`'s records: KIP-848 group `g2` at epoch 5 commits
    orders-1 at 50, then in an aborted transaction at 10 (not a commit: never a step back), in a committed one at
    60, and plainly at 70; and `__transaction_state-0` with the transactional producer's record."""
    def commit(offset: int) -> SimpleRecord:
        return SimpleRecord(encode_offset_value(OffsetValue(offset, 1, "", START_MS + offset)),
                            key=encode_key(OffsetKey("g2", TOPIC, 1)))

    def txn(at: int, epoch: int, offset: int) -> bytes:
        batch = encode_batch([commit(offset)], base_offset=at, partition_leader_epoch=1, timestamp_ms=START_MS + at)
        return with_producer(batch, 4000, epoch, 0, transactional=True)

    folder_of = lambda broker, name: scene.data(broker) / name
    segment = folder_of(BROKERS[0], "__consumer_offsets-0") / f"{0:020d}.log"
    at = sum(1 for b in iter_batches(segment.read_bytes(), verify_crc=False) for _ in b.records())
    group = [SimpleRecord(cg.encode_value(cg.GroupEpochValue(5)), key=cg.encode_key(cg.ConsumerGroupKey(cg.METADATA, "g2"))),
             SimpleRecord(cg.encode_value(cg.MemberMetadataValue(None, None, "c", "/h", (TOPIC,), None, 45000, "uniform")),
                          key=cg.encode_key(cg.ConsumerGroupKey(cg.MEMBER_METADATA, "g2", "m-1"))),
             commit(50)]
    tail = (encode_batch(group, base_offset=at, partition_leader_epoch=1, timestamp_ms=START_MS + at)
            + txn(at + 3, 0, 10) + encode_txn_marker_batch(4000, 0, 0, False, timestamp_ms=START_MS, base_offset=at + 4,
                                         partition_leader_epoch=1)
            + txn(at + 5, 1, 60) + encode_txn_marker_batch(4000, 1, 0, True, timestamp_ms=START_MS, base_offset=at + 6,
                                         partition_leader_epoch=1)
            + encode_batch([commit(70)], base_offset=at + 7, partition_leader_epoch=1, timestamp_ms=START_MS))
    state = TxnLogValue(TXN_PRODUCER, 2, 60000, 5, (), START_MS, START_MS)  # CompleteAbort
    txn_state = encode_batch([SimpleRecord(encode_txn_value(state, 1), key=encode_txn_key("tx-orders"))],
                             base_offset=0, partition_leader_epoch=1, timestamp_ms=START_MS)
    for broker in BROKERS:
        with (folder_of(broker, "__consumer_offsets-0") / f"{0:020d}.log").open("ab") as f:
            f.write(tail)
        folder_of(broker, "__transaction_state-0").mkdir(exist_ok=True)
        (folder_of(broker, "__transaction_state-0") / f"{0:020d}.log").write_bytes(txn_state)


def broker_state_offsets(scene: Scene) -> dict[int, int]:
    """Broker id -> the offset of its registration (fenced until a later record unfences it)."""
    controller = replayed(scene.root / "node-1" / "data")
    return {b: r.epoch for b, r in controller.cluster.brokers.items()}  # a broker's epoch is its registration's offset


def isr_view(scene: Scene, leader: int, partition: int, isr: list[int], metadata_offset: int) -> None:
    line = {"ts_ms": START_MS + 7_000, "node_id": leader, "event": "isr_view", "topic": TOPIC, "partition": partition,
            "leader_epoch": 1, "partition_epoch": 1, "isr": isr, "metadata_offset": metadata_offset,
            "reason": "committed"}
    with (scene.data(leader) / "pykraft-trace.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")


# ---- faults --------------------------------------------------------------------------------------------------
def flip_value_byte(scene: Scene, broker: int, partition: int, batch_index: int) -> tuple[int, int]:
    """Flip a byte of the last record's value of one batch of one replica; (position, base offset)."""
    replica = scene.logs[(broker, partition)]
    base = sorted(replica.batches)[batch_index]
    raw = bytearray(replica.batches[base])
    raw[-2] ^= 0x01  # the value's last byte (the record ends with its header count)
    replica.batches[base] = bytes(raw)
    return replica.position(base), base


def divergent_tail(scene: Scene, broker: int, partition: int, batches: int) -> int:
    """Rewrite the last `batches` batches of one replica with other values, same offsets and epoch, valid CRCs;
    returns the first rewritten offset."""
    replica = scene.logs[(broker, partition)]
    bases = sorted(replica.batches)[-batches:]
    for i, base in enumerate(bases):
        values = [f"diverged-{base + j}".encode() for j in range(PER_BATCH)]
        keys = [b"x"] * PER_BATCH
        replica.batches[base] = idempotent_batch(values, keys, base, 1, PRODUCER_ID[partition], 10_000 + i)
    return bases[0]


def duplicate_batch(scene: Scene, partition: int, batch_index: int) -> tuple[int, int]:
    """Append a copy of one idempotent batch (same producer, epoch, sequences) at the end of every replica;
    returns (the copy's base offset, the original's)."""
    original = sorted(scene.logs[(BROKERS[0], partition)].batches)[batch_index]
    at = scene.logs[(BROKERS[0], partition)].end()
    for broker in BROKERS:
        replica = scene.logs[(broker, partition)]
        copy = bytearray(replica.batches[original])
        struct.pack_into(">q", copy, 0, at)
        replica.batches[at] = bytes(copy)
    return at, original


def remove_batch(scene: Scene, partition: int, batch_index: int) -> list[int]:
    """Remove one batch from every replica (its offsets become a hole); returns the offsets it held."""
    base = sorted(scene.logs[(BROKERS[0], partition)].batches)[batch_index]
    for broker in BROKERS:
        del scene.logs[(broker, partition)].batches[base]
    return [base + j for j in range(PER_BATCH)]
