"""A replica that cannot become a voter (LocalReplica.can_become_voter=False: a node whose process.roles lacks
controller) is an observer whatever its log says: it never campaigns, leads or votes, even when the voter set in
its log names its own id and directory id (a broker started on a copy of a combined node's data)."""

from __future__ import annotations

import pytest
from kio.schema.end_quorum_epoch.v1.request import EndQuorumEpochRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch

from raft_context import CLUSTER
from reconfig_context import build, key

OBSERVER_ROLES = {"Unattached", "Follower"}


def roles_over(ctx, ms: int, step: int = 100) -> set[str]:
    seen = {ctx.role}
    for _ in range(ms // step):
        ctx.advance(step)
        seen.add(ctx.role)
    return seen


@pytest.mark.parametrize("voters", [[0], [0, 1, 2]])
def test_a_replica_named_a_voter_by_its_log_but_not_eligible_never_campaigns(voters):
    ctx = build(0, voters, can_become_voter=False)
    assert ctx.core.voters().is_voter(key(0))  # its log says it is a voter (here the only one, or one of three)
    assert not ctx.core.quorum.is_voter()
    assert roles_over(ctx, 20_000) <= OBSERVER_ROLES
    assert ctx.take_sent(VoteRequest) == []


def test_the_same_replica_eligible_leads_its_single_voter_log():
    ctx = build(0, [0])
    assert "Leader" in roles_over(ctx, 20_000)


def test_a_stored_leadership_or_candidacy_is_not_resumed_by_an_ineligible_replica():
    led = build(0, [0, 1, 2], can_become_voter=False, stored=ElectionState.with_elected_leader(5, 0, key(0)))
    assert led.role == "Unattached" and led.epoch == 5  # not Resigned: it acts as no voter at all
    assert led.take_sent(EndQuorumEpochRequest) == []
    ran = build(0, [0, 1, 2], can_become_voter=False, stored=ElectionState.with_voted_candidate(5, key(0)))
    assert ran.role == "Unattached"
    assert roles_over(ran, 10_000) <= OBSERVER_ROLES
    # Eligible, the same stored states resume as Raft requires.
    assert build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(5, 0, key(0))).role == "Resigned"
    assert build(0, [0, 1, 2], stored=ElectionState.with_voted_candidate(5, key(0))).role == "Candidate"


@pytest.mark.parametrize("pre_vote", [True, False])
def test_an_ineligible_replica_grants_no_vote(pre_vote):
    request = messages.vote_request(CLUSTER, key(1), 3, key(0), OffsetAndEpoch(100, 2), pre_vote)
    refused = build(0, [0, 1, 2], can_become_voter=False).request(request)
    assert not refused.response.topics[0].partitions[0].vote_granted
    granted = build(0, [0, 1, 2]).request(request)
    assert granted.response.topics[0].partitions[0].vote_granted  # the control: an eligible voter grants it
