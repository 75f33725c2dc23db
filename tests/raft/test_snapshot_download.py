"""A follower's snapshot download (KIP-630): FetchSnapshot answers, restarts, installation, voter history and
listener reloads. Named after Kafka's KafkaRaftClientSnapshotTest scenarios (§5.3)."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, encode_batch

from raft_context import build, endpoints, voter_set
from scenario_helpers import request_partition
from snapshot_helpers import MAX_FETCH, answer_fetch_with_snapshot, follower, fs_answer, loads, snapshot_bytes


# ---- the follower's download ----------------------------------------------------------------------------------
def test_fetch_response_with_snapshot_id_downloads_and_installs_the_snapshot() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    request = request_partition(send)
    assert send.request.replica_id == 0 and send.request.max_bytes == MAX_FETCH
    assert (request.snapshot_id.end_offset, request.snapshot_id.epoch, request.position) == (100, 1, 0)
    data = snapshot_bytes(snapshot_id, [b"foo", b"bar"])
    ctx.respond(send, fs_answer(snapshot_id, data, 0))
    assert bytes(ctx.log.read_snapshot(snapshot_id).records()) == data
    assert ctx.log.start_offset() == ctx.log.end_offset() == ctx.core.high_watermark == 100
    assert loads(ctx) == [snapshot_id]
    next_fetch = request_partition(ctx.take_sent(FetchRequest)[-1])
    assert (next_fetch.fetch_offset, next_fetch.last_fetched_epoch) == (100, 1)


def test_fetch_snapshot_response_partial_data() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    data = snapshot_bytes(snapshot_id, [b"foo", b"bar"])
    half = len(data) // 2
    ctx.respond(send, fs_answer(snapshot_id, data[:half], 0, size=len(data)))
    assert ctx.log.read_snapshot(snapshot_id) is None and loads(ctx) == []  # nothing visible before freezing
    send = ctx.take_sent(FetchSnapshotRequest)[-1]
    assert request_partition(send).position == half
    ctx.respond(send, fs_answer(snapshot_id, data[half:], half, size=len(data)))
    assert bytes(ctx.log.read_snapshot(snapshot_id).records()) == data and loads(ctx) == [snapshot_id]


def test_fetch_snapshot_response_with_wrong_position_is_dropped_and_retried() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    data = snapshot_bytes(snapshot_id, [b"foo"])
    ctx.respond(send, fs_answer(snapshot_id, data[5:], 5, size=len(data)))
    assert ctx.core.rejected_snapshot_chunks == 1 and not ctx.take_sent()
    ctx.advance(ctx.core.config.retry_backoff_ms)
    assert request_partition(ctx.take_sent(FetchSnapshotRequest)[-1]).position == 0


def test_fetch_snapshot_response_missing_snapshot_restarts_with_fetch() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, error=ErrorCode.snapshot_not_found))
    fetch_request = request_partition(ctx.take_sent(FetchRequest)[-1])
    assert (fetch_request.fetch_offset, fetch_request.last_fetched_epoch) == (0, 0)
    assert ctx.core.quorum.state.fetching_snapshot is None


@pytest.mark.parametrize("new_leader", [1, 2], ids=["same-leader", "other-leader"])
def test_fetch_snapshot_response_from_newer_epoch_follows_it_and_fetches(new_leader: int) -> None:
    ctx = follower(voters=[0, 1, 2])
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, epoch=3, leader=new_leader,
                                error=ErrorCode.fenced_leader_epoch))
    assert ctx.epoch == 3 and ctx.core.quorum.leader_id() == new_leader
    fetch_send = ctx.take_sent(FetchRequest)[-1]
    assert fetch_send.destination.node_id == new_leader
    assert (request_partition(fetch_send).current_leader_epoch, request_partition(fetch_send).fetch_offset) == (3, 0)


def test_fetch_snapshot_response_from_older_epoch_is_ignored_and_request_resent() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(OffsetAndEpoch(-1, -1), b"", -1, size=-1, epoch=1, leader=2,
                                error=ErrorCode.unknown_leader_epoch))
    assert ctx.epoch == 2 and ctx.core.quorum.leader_id() == 1
    ctx.advance(ctx.core.config.retry_backoff_ms)
    resent = request_partition(ctx.take_sent(FetchSnapshotRequest)[-1])
    assert (resent.snapshot_id.end_offset, resent.position) == (100, 0)


@pytest.mark.parametrize("bad_id", [OffsetAndEpoch(-1, 1), OffsetAndEpoch(100, -1)])
def test_fetch_snapshot_response_with_invalid_id_restarts_with_fetch(bad_id: OffsetAndEpoch) -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    ctx.respond(send, fs_answer(bad_id, b"", 0, size=10))
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 0


def test_fetch_snapshot_response_naming_another_snapshot_restarts_and_is_counted() -> None:
    ctx = follower()
    send = answer_fetch_with_snapshot(ctx, OffsetAndEpoch(100, 1))
    other = OffsetAndEpoch(120, 1)
    ctx.respond(send, fs_answer(other, snapshot_bytes(other), 0))
    assert ctx.core.rejected_snapshot_chunks == 1 and ctx.log.read_snapshot(other) is None
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 0


def test_fetch_response_with_invalid_snapshot_id_backs_off_without_resetting_fetch_timer() -> None:
    ctx = follower()
    backoff = ctx.core.config.retry_backoff_ms
    for bad_id in (OffsetAndEpoch(100, -1), OffsetAndEpoch(-1, 1)):
        send = ctx.take_sent(FetchRequest)[-1]
        ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, snapshot_id=bad_id))
        assert not ctx.take_sent(FetchSnapshotRequest)
        ctx.advance(backoff)
        assert request_partition(ctx.sent[-1]).fetch_offset == 0
    ctx.advance(ctx.core.config.fetch_timeout_ms - 2 * backoff)
    assert ctx.role == "Prospective"  # neither invalid answer counted as a successful fetch


def test_fetch_snapshot_response_to_not_follower_is_ignored() -> None:
    ctx = follower(config=QuorumConfig(append_linger_ms=0, request_timeout_ms=10_000))
    snapshot_id = OffsetAndEpoch(100, 1)
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    assert ctx.role == "Prospective"
    ctx.respond(send, fs_answer(snapshot_id, snapshot_bytes(snapshot_id), 0))
    assert ctx.role == "Prospective" and ctx.log.read_snapshot(snapshot_id) is None


def test_fetch_snapshot_keeps_follower_alive_like_fetch() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    data = snapshot_bytes(snapshot_id, [b"x" * 200])
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.advance(1500)
    ctx.respond(send, fs_answer(snapshot_id, data[:50], 0, size=len(data)))
    ctx.advance(1500)  # 3000 ms since the Fetch answer, 1500 since the last chunk
    assert ctx.role == "Follower"


def test_follower_reloads_voter_set_from_downloaded_snapshot() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    data = snapshot_bytes(snapshot_id, kraft=1, voters=voter_set([0, 1, 5]))
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    ctx.respond(send, fs_answer(snapshot_id, data, 0))
    assert set(ctx.core.voters().ids()) == {0, 1, 5}
    assert ctx.core.history.kraft_version_at(99) == 1


def test_listener_renotified_after_a_newer_snapshot_download() -> None:
    ctx = follower()
    first, second = OffsetAndEpoch(100, 1), OffsetAndEpoch(250, 2)
    send = answer_fetch_with_snapshot(ctx, first)
    ctx.respond(send, fs_answer(first, snapshot_bytes(first), 0))
    send = answer_fetch_with_snapshot(ctx, second)
    ctx.respond(send, fs_answer(second, snapshot_bytes(second), 0))
    assert loads(ctx) == [first, second] and ctx.core.listener.next_offset == 250


def test_follower_appends_after_installed_snapshot_and_commits_from_there() -> None:
    ctx = follower()
    snapshot_id = OffsetAndEpoch(100, 1)
    ctx.respond(answer_fetch_with_snapshot(ctx, snapshot_id), fs_answer(snapshot_id, snapshot_bytes(snapshot_id), 0))
    batch = encode_batch([SimpleRecord(value=b"after")], base_offset=100, partition_leader_epoch=2, timestamp_ms=0)
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, high_watermark=101, records=batch))
    assert ctx.log.end_offset() == 101 and ctx.core.high_watermark == 101
    assert ctx.core.listener.next_offset == 101


# ---- an observer's discovery Fetch during a download (voter_change_storm seeds 2004584, 2001608) -----------------
def _observer_downloading(snapshot_id: OffsetAndEpoch):
    """Observer 5 of voters {0, 1} following leader 1 at epoch 2, bootstrap server -1 = node 1's address, with a
    download of `snapshot_id` whose FetchSnapshot timed out (so the leader connection backs off)."""
    ctx = build(5, [0, 1], stored=ElectionState.with_elected_leader(2, 1),
                bootstrap=(endpoints(1).address("CONTROLLER"),))
    ctx.poll()
    send = answer_fetch_with_snapshot(ctx, snapshot_id)
    assert send.destination.node_id == 1
    ctx.advance(ctx.core.config.request_timeout_ms)  # the FetchSnapshot is lost: timeout, then backoff
    return ctx


def test_observer_discovery_fetch_answered_with_records_abandons_the_download() -> None:
    # The leader, asked again through a bootstrap server, serves our log from its end: a download still open would,
    # once frozen, leave a snapshot behind the log start (sim: log start 114, earliest snapshot 108).
    ctx = _observer_downloading(OffsetAndEpoch(3, 1))
    discovery = [s for s in ctx.take_sent(FetchRequest) if s.destination.node_id < 0]
    assert len(discovery) == 1
    batch = encode_batch([SimpleRecord(value=b"v")] * 4, base_offset=0, partition_leader_epoch=1, timestamp_ms=0)
    ctx.respond(discovery[0], messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, high_watermark=4,
                                                      records=batch))
    assert ctx.log.end_offset() == 4 and ctx.core.quorum.state.fetching_snapshot is None
    ctx.advance(ctx.core.config.retry_backoff_ms)
    assert not ctx.take_sent(FetchSnapshotRequest)
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 4


def test_observer_sends_nothing_to_the_leader_while_its_discovery_fetch_is_out() -> None:
    # Kafka's pollFollowerAsObserver: one request at a time. A second Fetch with the same offset answered late
    # named a snapshot the log had passed by then.
    ctx = _observer_downloading(OffsetAndEpoch(3, 1))
    assert [s.destination.node_id for s in ctx.take_sent()] == [-1]
    ctx.advance(ctx.core.config.retry_backoff_ms)  # the leader's backoff is over, the discovery Fetch is not
    assert ctx.take_sent() == []
