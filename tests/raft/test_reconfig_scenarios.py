"""KIP-853 scenarios around the voter changes: the voter set in the log (taking effect on append, reverted on
truncation), bootstrap records written by the first leader, discovery by replicas that do not know the voters, and
replicas that are voters before they know it (§5.3 KafkaRaftClientReconfigTest)."""

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch.v17.response import NodeEndpoint
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import VoterNode, add_voter, remove_voter
from pykraft.records import iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record, encode_control_batch

from raft_context import CLUSTER, endpoints
from reconfig_context import FULL_RANGE, build, elect, key, kraft1_log, kraft1_voters


def control_types_of_log(log: MemoryLog) -> list[list[ControlRecordType]]:
    return [[decode_control_record(r).type for r in batch.records()]
            for batch in iter_batches(log.read(0, 1 << 20).records, verify_crc=False) if batch.is_control]


def voters_batch(voters, base_offset: int, epoch: int) -> bytes:
    return encode_control_batch([voters.to_voters_record()], base_offset=base_offset, partition_leader_epoch=epoch,
                                timestamp_ms=0)


def leader_endpoint(node_id: int) -> tuple:
    return messages.node_endpoints(NodeEndpoint, node_id, endpoints(node_id), "CONTROLLER")


def follow(ctx, records: bytes, hwm: int, epoch: int = 2, leader: int = 0):
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=hwm, leader_id=leader, epoch=epoch,
                                              records=records))


# ---- the first leader's records ----------------------------------------------------------------------------------
def test_leader_does_not_bootstrap_records_with_kraft_version_0() -> None:
    """testLeaderDoesNotBootstrapRecordsWithKraftVersion0: static voters -> only the LeaderChange message."""
    ctx = build(0, static=True)
    elect(ctx)
    assert control_types_of_log(ctx.log) == [[ControlRecordType.LEADER_CHANGE]]


def test_leader_with_voters_in_the_log_writes_only_leader_change() -> None:
    ctx = build(0)
    elect(ctx)
    types = control_types_of_log(ctx.log)
    assert types[-1] == [ControlRecordType.LEADER_CHANGE]  # the voter set is already in the log


def test_follower_reads_kraft_bootstrap_records() -> None:
    """testFollowerReadsKRaftBootstrapRecords: a replica that only knows bootstrap servers learns kraft.version and
    the voter set from the leader's log, as soon as it appends them."""
    ctx = build(1, log=MemoryLog(), stored=ElectionState.with_elected_leader(1, 0))
    assert ctx.core.voters().ids() == frozenset() and ctx.core.kraft_version() == 0
    assert ctx.role == "Unattached"  # it knows the leader's id but not where it is
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    assert send.destination.node_id < 0  # so it asks a bootstrap server
    ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=0, leader_id=0, epoch=1,
                                              records=kraft1_log([0, 1, 2]).read(0, 1 << 20).records,
                                              endpoints=leader_endpoint(0)))
    assert ctx.core.kraft_version() == 1 and ctx.core.voters() == kraft1_voters([0, 1, 2])
    assert ctx.core.quorum.is_voter()


def test_observer_discovers_leader_with_unknown_voters() -> None:
    """testObserverDiscoversLeaderWithUnknownVoters: fetch from a bootstrap server, then follow the leader it names."""
    ctx = build(5, log=MemoryLog())
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    assert send.destination.node_id < 0
    # The bootstrap server is a voter that is not the leader: it names the leader and where to reach it.
    ctx.respond(send, messages.fetch_response(ErrorCode.none, partition_error=ErrorCode.not_leader_or_follower,
                                              leader_id=0, epoch=3, endpoints=leader_endpoint(0)))
    assert ctx.role == "Follower" and ctx.epoch == 3 and ctx.core.quorum.leader_id() == 0
    ctx.advance(100)
    assert [s.destination.node_id for s in ctx.take_sent(FetchRequest)] == [0]


# ---- the voter set in the log ------------------------------------------------------------------------------------
def test_appended_voters_record_takes_effect_before_commit_and_truncation_reverts_it() -> None:
    ctx = build(1, stored=ElectionState.with_elected_leader(2, 0))
    ctx.poll()
    bigger = add_voter(kraft1_voters([0, 1, 2]), VoterNode(key(3), endpoints(3), FULL_RANGE))
    follow(ctx, voters_batch(bigger, 3, 2), hwm=3)
    assert ctx.core.voters().ids() == {0, 1, 2, 3} and ctx.core.high_watermark == 3  # uncommitted, in effect
    # A new leader of epoch 3 never had that record: the follower truncates it and the old set is back.
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 2, 3, key(1), endpoints(2)))
    ctx.poll()
    send = ctx.take_sent(FetchRequest)[-1]
    ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=2, epoch=3, diverging=OffsetAndEpoch(3, 1)))
    assert ctx.log.end_offset() == 3
    assert ctx.core.voters().ids() == {0, 1, 2}


def test_follower_removed_from_the_voter_set_stops_campaigning() -> None:
    ctx = build(2, stored=ElectionState.with_elected_leader(2, 0))
    ctx.poll()
    follow(ctx, voters_batch(remove_voter(kraft1_voters([0, 1, 2]), key(2)), 3, 2), hwm=4)
    assert not ctx.core.quorum.is_voter()
    ctx.advance(10_000)
    assert ctx.role == "Follower"  # an observer: a fetch timeout makes it look for the leader, never campaign


def test_voter_added_by_the_log_campaigns_after_a_fetch_timeout() -> None:
    ctx = build(3, stored=ElectionState.with_elected_leader(2, 0))
    ctx.poll()
    assert not ctx.core.quorum.is_voter()
    follow(ctx, voters_batch(add_voter(kraft1_voters([0, 1, 2]), VoterNode(key(3), endpoints(3), FULL_RANGE)), 3, 2),
           hwm=4)
    assert ctx.core.quorum.is_voter()
    ctx.advance(2000)
    assert ctx.role == "Prospective"
    # It asks the voters it now knows (node 0 as soon as its in-flight Fetch is done: one request per peer).
    assert {s.destination.node_id for s in ctx.take_sent(VoteRequest)} >= {1, 2}


def test_new_voter_accepts_begin_quorum_epoch_before_it_knows_it_is_a_voter() -> None:
    """KIP-853: the leader may announce itself to an added voter that has not replicated the VotersRecord yet."""
    ctx = build(3, log=kraft1_log([0, 1, 2]))
    assert not ctx.core.quorum.is_voter()
    ctx.request(messages.begin_quorum_epoch_request(CLUSTER, 0, 4, key(3), endpoints(0)))
    assert ctx.role == "Follower" and ctx.epoch == 4 and ctx.core.quorum.leader_id() == 0


def test_replica_outside_the_voter_set_still_grants_votes() -> None:
    """KIP-853 'Leader election': votes are answered whether or not the candidate or the voter is in the local
    voter set; only the log comparison decides."""
    ctx = build(3, log=kraft1_log([0, 1, 2]))
    last = ctx.core.last_offset_and_epoch()
    request = messages.vote_request(CLUSTER, key(4), 2, key(3), last, False)
    response = ctx.request(request).response.topics[0].partitions[0]
    assert response.error_code == ErrorCode.none and response.vote_granted
