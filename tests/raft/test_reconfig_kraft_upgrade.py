"""kraft.version 0 -> 1 upgrade on the leader (kraft_upgrade.py): one test per numbered rule, and what the
upgrade enables afterwards."""

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.update_raft_voter.v0.request import UpdateRaftVoterRequest

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.client import NotLeaderError
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_change import KRaftVersionUpgradeError
from pykraft.raft.voter_set import SupportedVersionRange
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

from raft_context import CLUSTER, endpoints
from reconfig_context import FULL_RANGE, build, elect, fetch, key, response_for


def static_leader():
    """Node 0 leads a static (kraft.version 0) quorum of 0, 1, 2 and its epoch has committed."""
    ctx = build(0, static=True)
    elect(ctx)
    fetch(ctx, 1)
    fetch(ctx, 2)
    assert ctx.core.kraft_version() == 0 and ctx.core.high_watermark is not None
    return ctx


def report(ctx, node_id, supported=FULL_RANGE):
    request = rm.update_voter_request(CLUSTER, ctx.epoch, key(node_id), endpoints(node_id), supported)
    ctx._run(ctx.core.handle_request(("update", node_id), request, ctx.now))
    assert response_for(ctx, ("update", node_id)).error_code == ErrorCode.none


def upgrade(ctx, version=1, validate_only=False):
    offset, ready = ctx.core.upgrade_kraft_version(version, ctx.now, validate_only)
    ctx._run(ready)
    return offset


def control_types(log: MemoryLog, offset: int) -> list[ControlRecordType]:
    batch = next(b for b in iter_batches(log.read(offset, 1 << 20).records, verify_crc=False) if b.last_offset >= offset)
    return [decode_control_record(r).type for r in batch.records()]


def test_rule4_upgrade_appends_kraft_version_and_voters_in_one_control_batch() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2)
    offset = upgrade(ctx)
    assert control_types(ctx.log, offset) == [ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS]
    assert ctx.core.kraft_version() == 1  # in effect on append, like every control record
    assert ctx.core.voters().keys() == {key(0), key(1), key(2)}  # directory ids learned from the reports
    fetch(ctx, 1)
    assert ctx.core.high_watermark > offset  # committed by the quorum: the caller answers UpdateFeatures now


def test_rule1_upgrade_on_a_non_leader_raises_not_leader() -> None:
    ctx = build(1, static=True, stored=ElectionState.with_elected_leader(2, 0))
    with pytest.raises(NotLeaderError):
        ctx.core.upgrade_kraft_version(1, ctx.now)


def test_rule1_same_version_is_a_noop_and_downgrade_or_unknown_version_is_refused() -> None:
    ctx = static_leader()
    end = ctx.log.end_offset()
    assert upgrade(ctx, 0) is None and ctx.log.end_offset() == end
    with pytest.raises(KRaftVersionUpgradeError):
        upgrade(ctx, 2)
    report(ctx, 1)
    report(ctx, 2)
    upgrade(ctx, 1)
    with pytest.raises(KRaftVersionUpgradeError, match="downgraded"):
        upgrade(ctx, 0)


def test_rule2_upgrade_before_the_epoch_commits_is_refused() -> None:
    ctx = build(0, static=True)
    elect(ctx)
    with pytest.raises(KRaftVersionUpgradeError, match="committed its epoch"):
        upgrade(ctx)


def test_rule2_upgrade_while_a_voter_change_is_uncommitted_is_refused() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2)
    upgrade(ctx)
    # The upgrade's own VotersRecord is uncommitted: a second voter change (here AddVoter) must wait.
    ctx.advance(10)
    fetch(ctx, 3, offset=0)
    ctx._run(ctx.core.handle_request("add", rm.add_voter_request(CLUSTER, key(3), endpoints(3), 10_000), ctx.now))
    assert response_for(ctx, "add").error_code == ErrorCode.request_timed_out


def test_rule3_a_voter_that_has_not_reported_blocks_the_upgrade() -> None:
    ctx = static_leader()
    report(ctx, 1)
    end = ctx.log.end_offset()
    with pytest.raises(KRaftVersionUpgradeError, match=r"\[2\]"):
        upgrade(ctx)
    assert ctx.log.end_offset() == end and ctx.core.kraft_version() == 0


def test_rule3_a_voter_without_support_for_the_new_version_blocks_the_upgrade() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2, SupportedVersionRange(0, 0))
    with pytest.raises(KRaftVersionUpgradeError, match="do not support"):
        upgrade(ctx)


def test_rule3_reports_belong_to_one_leader_epoch() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2)
    ctx.core.reconfig.volatile_for(ctx.epoch + 1)  # as if a later epoch of this leader asked
    with pytest.raises(KRaftVersionUpgradeError, match="have not reported"):
        upgrade(ctx)


def test_rule4_validate_only_writes_nothing() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2)
    end = ctx.log.end_offset()
    assert upgrade(ctx, validate_only=True) is None
    assert ctx.log.end_offset() == end and ctx.core.kraft_version() == 0


def test_after_the_upgrade_commits_voter_changes_are_allowed() -> None:
    ctx = static_leader()
    report(ctx, 1)
    report(ctx, 2)
    upgrade(ctx)
    fetch(ctx, 1)
    fetch(ctx, 2)
    ctx._run(ctx.core.handle_request("remove", rm.remove_voter_request(CLUSTER, key(2)), ctx.now))
    assert response_for(ctx, "remove") is None  # accepted: waits for its commit
    assert ctx.core.voters().ids() == {0, 1}


def test_follower_learns_kraft_version_1_and_the_voter_set_by_replication() -> None:
    leader = static_leader()
    report(leader, 1)
    report(leader, 2)
    upgrade(leader)
    follower = build(1, static=True, stored=ElectionState.with_elected_leader(leader.epoch, 0))
    follower.poll()
    send = follower.take_sent()[-1]
    assert isinstance(send.request, UpdateRaftVoterRequest)  # at kraft.version 0 the report goes first
    follower.respond(send, rm.update_voter_response(ErrorCode.none, 0, leader.epoch, None))
    send = follower.take_sent()[-1]
    assert isinstance(send.request, FetchRequest)
    follower.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=leader.log.end_offset(), leader_id=0,
                                                   epoch=leader.epoch, records=leader.log.read(0, 1 << 20).records))
    assert follower.core.kraft_version() == 1
    assert follower.core.voters().keys() == {key(0), key(1), key(2)}
