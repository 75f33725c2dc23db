"""Dynamic quorums bootstrapped from the bootstrap snapshot (`storage format --standalone` or
`--initial-controllers`; KIP-853 "Bootstrapping"), then grown with AddVoter: §5.3 testLeaderWritesBootstrapRecords
and the standalone-then-add-controllers flow."""

from kio.schema.errors import ErrorCode

from pykraft.raft import reconfig_messages as rm
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import VoterSet
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from raft_context import CLUSTER, endpoints
from reconfig_context import api_versions_answer, build, elect, fetch, key, kraft1_voters, response_for


def bootstrapped_log(voters: VoterSet) -> MemoryLog:
    """What `storage format` leaves: an empty log and the bootstrap snapshot (0, 0) with kraft.version 1 and the
    initial voters."""
    log = MemoryLog()
    raw = log.create_new_snapshot_unchecked(BOOTSTRAP_SNAPSHOT_ID)
    writer = SnapshotWriter(raw, last_contained_log_time_ms=0, now_ms=0, kraft_version=1, voters=voters,
                            on_frozen=log.on_snapshot_frozen)
    writer.freeze()
    return log


def first_batch_types(log: MemoryLog) -> list[ControlRecordType]:
    batch = next(iter_batches(log.read(0, 1 << 20).records, verify_crc=False))
    return [decode_control_record(r).type for r in batch.records()]


def test_leader_writes_bootstrap_records() -> None:
    """testLeaderWritesBootstrapRecords: the bootstrap snapshot is never served, so the first leader copies its
    KRaftVersion and Voters records into the log, in its start-of-epoch batch."""
    ctx = build(0, log=bootstrapped_log(kraft1_voters([0, 1, 2])))
    assert ctx.core.kraft_version() == 1 and ctx.core.history.last_voter_set_offset() is None
    elect(ctx)
    assert first_batch_types(ctx.log) == [ControlRecordType.LEADER_CHANGE, ControlRecordType.KRAFT_VERSION,
                                          ControlRecordType.KRAFT_VOTERS]
    assert ctx.core.history.last_voter_set_offset() == 2 and ctx.core.voters() == kraft1_voters([0, 1, 2])


def test_standalone_controller_grows_the_quorum_with_add_voter() -> None:
    """--standalone: node 0 is the only voter and leads at once; controller 1 starts as an observer, catches up and
    is added; from then on node 1's fetches are needed to commit."""
    ctx = build(0, [0], log=bootstrapped_log(kraft1_voters([0])))
    assert ctx.role == "Leader" and ctx.core.high_watermark == ctx.log.end_offset() == 3
    ctx.advance(10)
    fetch(ctx, 1)  # the observer is caught up
    ctx._run(ctx.core.handle_request("add", rm.add_voter_request(CLUSTER, key(1), endpoints(1), 10_000), ctx.now))
    api_versions_answer(ctx)
    assert ctx.core.voters().ids() == {0, 1}
    assert response_for(ctx, "add") is None  # the leader alone is no longer a majority
    fetch(ctx, 1)
    assert response_for(ctx, "add").error_code == ErrorCode.none
    _, ready = ctx.core.append([b"after"], ctx.now)
    ctx._run(ready)
    committed = ctx.core.high_watermark
    assert committed < ctx.log.end_offset()  # new data now waits for node 1
    fetch(ctx, 1)
    assert ctx.core.high_watermark == ctx.log.end_offset()


def test_observer_asks_bootstrap_servers_for_the_leader_at_start_up():
    """An Unattached observer has no election timer: without a first discovery Fetch at initialization, nothing
    would ever wake it up (found with a real node formatted with --no-initial-controllers)."""
    from kio.schema.fetch.v17.request import FetchRequest

    from pykraft.raft.memory_log import MemoryLog

    ctx = build(4, [1, 2, 3], log=MemoryLog())
    assert ctx.role == "Unattached"
    sends = ctx.take_sent(FetchRequest)
    assert len(sends) == 1 and sends[0].destination.node_id < 0  # a bootstrap server, not a known voter


def test_leader_change_written_at_kafkas_version_0() -> None:
    """Kafka reads every LeaderChange value at ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION (0): a v1 value (voter
    directory ids) fails its parser, so the leader writes v0, voter ids only, even with directory ids in its voters."""
    ctx = build(0, log=bootstrapped_log(kraft1_voters([0, 1, 2])))
    elect(ctx)
    batch = next(iter_batches(ctx.log.read(0, 1 << 20).records, verify_crc=False))
    first = next(iter(batch.records()))
    assert bytes(first.value)[:2] == b"\x00\x00"  # the value's leading int16 is its schema version
    change = decode_control_record(first).message
    assert change.leader_id == 0
    assert [v.voter_id for v in change.voters] == [0, 1, 2]
    assert not hasattr(change.voters[0], "voter_directory_id")
    granting = [v.voter_id for v in change.granting_voters]
    assert 0 in granting and len(granting) >= 2 and set(granting) <= {0, 1, 2}  # a majority, the leader in it
