"""Following, observers, the fetch purgatory, listener delivery, DescribeQuorum and shutdown of the raft core,
named after Kafka's KafkaRaftClientTest scenarios (§5.3)."""

from __future__ import annotations

from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig
from pykraft.raft.effects import LeaderChanged, ShutdownComplete
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey
from pykraft.records import SimpleRecord, encode_batch

from raft_context import CLUSTER, append_batch, build, endpoints
from scenario_helpers import become_leader, commits, fetch, fetch_part, leader_changes, request_partition

NONE = ErrorCode.none


def batch(base: int, epoch: int, count: int = 1) -> bytes:
    return encode_batch([SimpleRecord(value=b"v%d" % (base + i)) for i in range(count)], base_offset=base,
                        partition_leader_epoch=epoch, timestamp_ms=0)


def describe(ctx):
    req = dq_req.DescribeQuorumRequest(topics=(dq_req.TopicData(topic_name="__cluster_metadata", partitions=(
        dq_req.PartitionData(partition_index=0),)),))
    return ctx.request(req).response.topics[0].partitions[0]


def observer(epoch: int = 5, leader: int = 1, config: QuorumConfig | None = None, local_id: int | None = 0):
    """An observer (not in voters {1, 2}) that follows `leader`."""
    ctx = build(local_id, [1, 2], stored=ElectionState.with_elected_leader(epoch, leader) if local_id is not None
                else None, config=config)
    return ctx


# ---- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------------------------------------------
def test_handle_begin_quorum_request_more_endpoints() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(3, 1))
    more = Endpoints.of([*endpoints(1).items, Endpoint("OTHER", "localhost", 8991)])
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 1, 3, ReplicaKey(0), more))
    assert ctx.role == "Follower" and ctx.core.quorum.state.leader_endpoints == more
    assert ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 1, 3, ReplicaKey(0), endpoints(1))) \
        .response.topics[0].partitions[0].error_code == NONE
    assert ctx.core.quorum.state.leader_endpoints == more  # fewer endpoints teach nothing


def test_end_quorum_starts_new_election_immediately_if_follower_unattached() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_unknown_leader(2))
    ctx.take_sent()
    ctx.request(messages.end_quorum_epoch_request(CLUSTER, 1, 2, (ReplicaKey(0), ReplicaKey(2)), endpoints(1)))
    ctx.poll()
    assert ctx.role == "Prospective"  # first preferred successor: no backoff at all
    assert {s.destination.node_id for s in ctx.take_sent(VoteRequest)} == {1, 2}


# ---- timeouts and observers ------------------------------------------------------------------------------------
def test_observer_quorum_discovery_failure_retries_another_voter() -> None:
    ctx = build(0, [1, 2], stored=ElectionState.with_unknown_leader(5))
    ctx.poll()
    first = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(first, messages.fetch_response(ErrorCode.broker_not_available))
    ctx.poll()
    second = ctx.take_sent(FetchRequest)[-1]
    assert second.destination.node_id != first.destination.node_id  # the first one is backing off
    ctx.respond(second, messages.fetch_response(NONE, partition_error=ErrorCode.not_leader_or_follower,
                                                leader_id=1, epoch=5))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1


def test_observer_send_discovery_fetch_after_fetch_timeout() -> None:
    ctx = observer()  # request timeout = fetch timeout: the unanswered Fetch to the leader has expired by then
    ctx.poll()
    assert ctx.take_sent(FetchRequest)[-1].destination.node_id == 1
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    discovery = ctx.take_sent(FetchRequest)
    assert [s.destination.node_id for s in discovery] == [2]
    assert ctx.role == "Follower" and ctx.epoch == 5  # observers never campaign
    ctx.respond(discovery[0], messages.fetch_response(NONE, partition_error=ErrorCode.not_leader_or_follower,
                                                      leader_id=1, epoch=5))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1


def test_observer_leader_rediscovery_after_request_timeout() -> None:
    ctx = observer(config=QuorumConfig(append_linger_ms=0, request_timeout_ms=1000))
    ctx.poll()
    assert ctx.take_sent(FetchRequest)[-1].destination.node_id == 1
    ctx.advance(1000)  # the Fetch to the leader times out: ask the other voter while the leader backs off
    second = ctx.take_sent(FetchRequest)[-1]
    assert second.destination.node_id == 2 and request_partition(second).current_leader_epoch == 5
    ctx.respond(second, messages.fetch_response(NONE, partition_error=ErrorCode.not_leader_or_follower,
                                                leader_id=2, epoch=6))
    assert ctx.role == "Follower" and (ctx.epoch, ctx.core.quorum.leader_id()) == (6, 2)


def test_observer_fetch_with_no_local_id() -> None:
    ctx = build(None, [1, 2])
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    assert send.request.replica_state.replica_id == -1
    error = NONE if send.destination.node_id == 1 else ErrorCode.not_leader_or_follower
    ctx.respond(send, messages.fetch_response(NONE, partition_error=error, leader_id=1, epoch=4))
    assert ctx.role == "Follower" and ctx.core.quorum.leader_id() == 1
    send = ctx.take_sent(FetchRequest)[-1]
    assert send.destination.node_id == 1 and send.request.replica_state.replica_id == -1


def test_observer_replication_appends_and_commits() -> None:
    ctx = observer()
    ctx.poll()
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=2, records=batch(0, 5, 2)))
    assert ctx.log.end_offset() == 2 and ctx.core.high_watermark == 2 and commits(ctx) == [(0, 1)]
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 2


# ---- fetch and purgatory ---------------------------------------------------------------------------------------
def leader_with_parked_fetch():
    ctx = build(0, [0, 1, 2])
    become_leader(ctx)
    epoch = ctx.epoch
    ctx.request(fetch(1, epoch, 1, epoch))
    ctx.request_no_response(fetch(1, epoch, 1, epoch, max_wait=500), ref="parked")
    return ctx, epoch


def test_purgatory_fetch_completed_by_follower_transition() -> None:
    ctx, epoch = leader_with_parked_fetch()
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 2, epoch + 1, ReplicaKey(0), endpoints(2)))
    parked = [r for r in ctx.responses if r.ref == "parked"]
    assert len(parked) == 1
    p = fetch_part(parked[0])
    assert p.error_code == ErrorCode.not_leader_or_follower and not p.records
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (2, epoch + 1)


def test_resign_will_complete_fetch_purgatory() -> None:
    ctx, epoch = leader_with_parked_fetch()
    ctx.responses.clear()
    ctx._run(ctx.core.resign(ctx.now))
    parked = [r for r in ctx.responses if r.ref == "parked"]
    assert len(parked) == 1 and fetch_part(parked[0]).error_code == ErrorCode.not_leader_or_follower


def test_fetch_response_ignored_after_becoming_prospective() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(5, 1),
                config=QuorumConfig(append_linger_ms=0, request_timeout_ms=10_000))
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.advance(ctx.core.config.fetch_timeout_ms)
    assert ctx.role == "Prospective"
    ctx.respond(send, messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=3, records=batch(0, 5, 3)))
    assert ctx.role == "Prospective" and ctx.log.end_offset() == 0 and ctx.core.dropped_responses == 1


# ---- listener delivery -----------------------------------------------------------------------------------------
def test_handle_commit_callback_fires_after_follower_high_watermark_advances() -> None:
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(5, 1))
    ctx.poll()
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=0, records=batch(0, 5, 3)))
    assert ctx.log.end_offset() == 3 and commits(ctx) == []
    ctx.respond(ctx.take_sent(FetchRequest)[-1], messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=3))
    assert commits(ctx) == [(0, 2)]


def test_follower_lists_commits_of_an_answer_with_records_when_its_flush_completes() -> None:
    """The answer that brings new records also commits earlier ones: the Ready that asks for the flush does not list
    them (reading them delayed the follower's fsync); `on_log_flushed` does, and the replay order is kept."""
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(5, 1))
    ctx.poll()
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=0, records=batch(0, 5, 2)))
    ready = ctx.core.handle_response(1, ctx.take_sent(FetchRequest)[-1].correlation_id, messages.fetch_response(
        NONE, leader_id=1, epoch=5, high_watermark=2, records=batch(2, 5)), ctx.now)
    kinds = [type(e).__name__ for e in ready.effects]
    assert "FlushLog" in kinds and "CommitBatches" not in kinds
    ctx._run(ready)  # the harness feeds on_log_flushed inside the flush
    assert commits(ctx) == [(0, 1)]
    ctx.respond(ctx.take_sent(FetchRequest)[-1], messages.fetch_response(NONE, leader_id=1, epoch=5, high_watermark=3))
    assert commits(ctx) == [(0, 1), (2, 2)]  # an answer without records (no flush) lists them at once


def test_handle_leader_change_fires_after_listener_reaches_epoch_start_offset() -> None:
    log = MemoryLog()
    append_batch(log, 1, 3)  # uncommitted records of an earlier epoch
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    epoch = ctx.epoch
    assert LeaderChanged(0, epoch) not in leader_changes(ctx)  # the listener is still at offset 0 < 3
    ctx.request(fetch(1, epoch, ctx.log.end_offset(), epoch))
    assert commits(ctx) == [(0, 3)]
    changes = [i for i, e in enumerate(ctx.effects) if e == LeaderChanged(0, epoch)]
    first_commit = next(i for i, e in enumerate(ctx.effects) if type(e).__name__ == "CommitBatches")
    assert changes and changes[0] > first_commit  # announced once the records before its epoch are replayed


# ---- DescribeQuorum --------------------------------------------------------------------------------------------
def test_describe_quorum_with_observer_until_its_session_expires() -> None:
    ctx = build(0, [0, 1])
    become_leader(ctx)
    epoch, start = ctx.epoch, ctx.now
    ctx.request(fetch(1, epoch, 1, epoch))
    ctx.request(fetch(7, epoch, 1, epoch))
    p = describe(ctx)
    assert [(o.replica_id, o.log_end_offset, o.last_fetch_timestamp) for o in p.observers] == [(7, 1, start)]
    assert 7 not in [v.replica_id for v in p.current_voters]
    for _ in range(31):  # keep the voter fetching; the observer stays silent for more than 300 s
        ctx.advance(10_000)
        ctx.request(fetch(1, epoch, 1, epoch))
    assert describe(ctx).observers == ()


def test_describe_quorum_non_monotonic_follower_fetch() -> None:
    ctx = build(0, [0, 1])
    become_leader(ctx)
    epoch = ctx.epoch
    _, ready = ctx.core.append([b"a", b"b"], ctx.now)
    ctx._run(ready)
    ctx.request(fetch(1, epoch, 3, epoch))
    assert ctx.core.high_watermark == 3
    ctx.request(fetch(1, epoch, 1, epoch))  # the follower lost unflushed data and fetches from further back
    p = describe(ctx)
    assert [(v.replica_id, v.log_end_offset) for v in p.current_voters] == [(0, 3), (1, 1)]
    assert p.high_watermark == 3  # never decreases


# ---- shutdown --------------------------------------------------------------------------------------------------
def test_follower_graceful_shutdown_completes_at_once() -> None:
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
    ctx._run(ctx.core.shutdown(ctx.now, 5000))
    assert [e.graceful for e in ctx.effects if isinstance(e, ShutdownComplete)] == [True]
    assert ctx.role == "Follower"


def test_another_leader_claimed_in_own_epoch_is_ignored_not_fatal() -> None:
    ctx = build(0, [0, 1, 2])
    become_leader(ctx)
    epoch = ctx.epoch
    ctx.request(messages.end_quorum_epoch_request(CLUSTER, 2, epoch, (ReplicaKey(0),), endpoints(2)))
    assert ctx.role == "Leader" and ctx.core.conflicting_leader_claims == 1
    ctx._run(ctx.core.resign(ctx.now))
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 2, epoch, ReplicaKey(0), endpoints(2)))
    assert ctx.role == "Resigned" and ctx.core.conflicting_leader_claims == 2


def test_describe_quorum_caught_up_timestamps() -> None:
    ctx = build(0, [0, 1])
    become_leader(ctx)
    epoch, start = ctx.epoch, ctx.now
    _, ready = ctx.core.append([b"a", b"b"], ctx.now)
    ctx._run(ready)
    ctx.request(fetch(1, epoch, 1, epoch))  # behind the leader's end offset 3
    assert describe(ctx).current_voters[1].last_caught_up_timestamp == -1
    ctx.advance(100)
    _, ready = ctx.core.append([b"c"], ctx.now)
    ctx._run(ready)
    ctx.request(fetch(1, epoch, 3, epoch))  # behind 4, but it reached the 3 the leader had at its previous fetch
    leader, follower = describe(ctx).current_voters
    assert (leader.last_fetch_timestamp, leader.last_caught_up_timestamp) == (ctx.now, ctx.now)
    assert (follower.last_fetch_timestamp, follower.last_caught_up_timestamp) == (start + 100, start)
    ctx.advance(100)
    ctx.request(fetch(1, epoch, 4, epoch))  # at the leader's end offset: caught up now
    assert describe(ctx).current_voters[1].last_caught_up_timestamp == start + 200
