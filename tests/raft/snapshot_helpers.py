"""Snapshot builders and drives shared by the snapshot scenario tests."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.effects import LoadSnapshot
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from raft_context import CLUSTER, Context, append_batch, build
from scenario_helpers import become_leader, fetch

MAX_FETCH = QuorumConfig().max_fetch_size_bytes


def write_snapshot(log: MemoryLog, snapshot_id: OffsetAndEpoch, values: list[bytes] = (), kraft: int = 0,
                   voters: VoterSet | None = None) -> bytes:
    """A snapshot in Kafka's layout written straight into `log` (as a previous run of the node would have)."""
    raw = log.create_new_snapshot_unchecked(snapshot_id)
    writer = SnapshotWriter(raw, last_contained_log_time_ms=0, now_ms=0, kraft_version=kraft, voters=voters,
                            on_frozen=log.on_snapshot_frozen)
    writer.append(list(values))
    writer.freeze()
    return bytes(log.read_snapshot(snapshot_id).records())


def snapshot_bytes(snapshot_id: OffsetAndEpoch, values: list[bytes] = (), kraft: int = 0,
                   voters: VoterSet | None = None) -> bytes:
    return write_snapshot(MemoryLog(), snapshot_id, values, kraft, voters)


def data_values(data: bytes) -> list[bytes]:
    return [bytes(r.value) for b in iter_batches(data) if not b.is_control for r in b.records()]


def control_types(data: bytes) -> list[ControlRecordType]:
    return [decode_control_record(r).type for b in iter_batches(data) if b.is_control for r in b.records()]


def log_with(*batches: tuple[int, int]) -> MemoryLog:
    """A log holding batches of (epoch, record count)."""
    log = MemoryLog()
    for epoch, count in batches:
        append_batch(log, epoch, count)
    return log


def advance_hwm_to_leo(ctx: Context, voter: int = 1) -> None:
    ctx.request(fetch(voter, ctx.epoch, ctx.log.end_offset(), ctx.log.last_fetched_epoch()))
    assert ctx.core.high_watermark == ctx.log.end_offset()


def fs_request(epoch: int, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int = 2**31 - 1,
               replica: int | None = None, cluster: str | None = CLUSTER) -> FetchSnapshotRequest:
    key = ReplicaKey(replica) if replica is not None else None
    return messages.fetch_snapshot_request(cluster, key, epoch, snapshot_id, position, max_bytes)


def fs_part(respond):
    return respond.response.topics[0].partitions[0]


def leader_with_snapshot(values: list[bytes] = (b"foo", b"bar")) -> tuple[Context, OffsetAndEpoch]:
    """Leader of voters {0, 1} at epoch 2 over one record of epoch 1, with snapshot (1, 1) frozen."""
    ctx = build(0, [0, 1], log=log_with((1, 1)))
    become_leader(ctx)
    advance_hwm_to_leo(ctx)
    snapshot_id = OffsetAndEpoch(1, 1)
    writer = ctx.core.create_snapshot(snapshot_id, 0, ctx.now)
    writer.append(list(values))
    writer.freeze()
    return ctx, snapshot_id


def follower(epoch: int = 2, leader: int = 1, voters: list[int] = (0, 1), config: QuorumConfig | None = None,
             log: MemoryLog | None = None) -> Context:
    ctx = build(0, list(voters), stored=ElectionState.with_elected_leader(epoch, leader), config=config, log=log)
    ctx.poll()
    return ctx


def answer_fetch_with_snapshot(ctx: Context, snapshot_id: OffsetAndEpoch, epoch: int = 2, leader: int = 1):
    """Answer the follower's pending Fetch with SnapshotId; returns the FetchSnapshot it sends next."""
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=leader, epoch=epoch,
                                              snapshot_id=snapshot_id, high_watermark=200))
    snapshot_sends = ctx.take_sent(FetchSnapshotRequest)
    assert len(snapshot_sends) == 1 and not ctx.take_sent(FetchRequest)  # fetching is paused
    return snapshot_sends[0]


def fs_answer(snapshot_id: OffsetAndEpoch, data: bytes, position: int, size: int | None = None, epoch: int = 2,
              leader: int = 1, error: ErrorCode = ErrorCode.none):
    return messages.fetch_snapshot_response(
        ErrorCode.none, partition_error=error, leader_id=leader, epoch=epoch, snapshot_id=snapshot_id,
        size=len(data) if size is None else size, position=position, records=data)


def loads(ctx: Context) -> list[OffsetAndEpoch]:
    return [e.snapshot_id for e in ctx.effects if isinstance(e, LoadSnapshot)]
