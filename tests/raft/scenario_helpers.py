"""Request builders and short drives shared by the client scenario tests (on top of raft_context.build)."""

from __future__ import annotations

from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.effects import CommitBatches, LeaderChanged, Respond
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ReplicaKey

from raft_context import CLUSTER, Context


def vote(candidate: int, epoch: int, last_epoch: int = 0, last_offset: int = 0, pre_vote: bool = False,
         voter: int = 0, cluster: str | None = CLUSTER, candidate_key: ReplicaKey | None = None,
         voter_key: ReplicaKey | None = None) -> VoteRequest:
    return messages.vote_request(cluster, candidate_key or ReplicaKey(candidate), epoch, voter_key or ReplicaKey(voter),
                                 OffsetAndEpoch(last_offset, last_epoch), pre_vote)


def pre_vote(candidate: int, epoch: int, last_epoch: int = 0, last_offset: int = 0, **kwargs) -> VoteRequest:
    return vote(candidate, epoch, last_epoch, last_offset, pre_vote=True, **kwargs)


def vote_answer(respond: Respond) -> tuple:
    """(partition error, granted, leader id, leader epoch) of a Vote response."""
    p = respond.response.topics[0].partitions[0]
    return p.error_code, p.vote_granted, p.leader_id, p.leader_epoch


def vote_response(epoch: int, granted: bool, leader_id: int | None = None,
                  error: ErrorCode = ErrorCode.none):
    return messages.vote_response(ErrorCode.none, error, leader_id, epoch, granted)


def fetch(replica: int | None, epoch: int, offset: int, last_epoch: int, max_wait: int = 0,
          cluster: str | None = CLUSTER) -> FetchRequest:
    key = ReplicaKey(replica) if replica is not None else None
    return messages.fetch_request(cluster, key, epoch, offset, last_epoch, 0, max_wait, 1 << 20)


def fetch_part(respond: Respond):
    return respond.response.responses[0].partitions[0]


def request_partition(send):
    return send.request.topics[0].partitions[0]


def answer_votes(ctx: Context, granted: bool = True) -> None:
    for send in ctx.take_sent(VoteRequest):
        ctx.respond(send, vote_response(ctx.epoch, granted))


def become_leader(ctx: Context) -> None:
    """Election timeout, pre-vote round and vote round, all granted."""
    ctx.advance(2 * ctx.core.config.election_timeout_ms)
    for _ in range(2):
        answer_votes(ctx)
    assert ctx.role == "Leader"
    for send in ctx.take_sent(BeginQuorumEpochRequest):
        ctx.respond(send, messages.begin_quorum_epoch_response(ErrorCode.none, ErrorCode.none, 0, ctx.epoch))
    ctx.take_sent()


def commits(ctx: Context) -> list[tuple[int, int]]:
    return [(e.base_offset, e.last_offset) for e in ctx.effects if isinstance(e, CommitBatches)]


def leader_changes(ctx: Context) -> list[LeaderChanged]:
    return [e for e in ctx.effects if isinstance(e, LeaderChanged)]
