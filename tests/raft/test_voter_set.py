"""VoterSet arithmetic against a naive model, and the reassignment planner (hypothesis)."""

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.raft.reassignment import AddVoterStep, Blocked, RemoveVoterStep, ResignLeaderStep, next_step
from pykraft.raft.voter_set import (
    Endpoint,
    Endpoints,
    ReplicaKey,
    SupportedVersionRange,
    VoterNode,
    VoterSet,
    VoterSetError,
    add_voter,
    remove_voter,
    update_voter,
)

DIRS = [uuid.UUID(int=i) for i in range(1, 4)]
keys = st.builds(ReplicaKey, st.integers(0, 6), st.sampled_from(DIRS))


def node(key: ReplicaKey, port: int = 9093) -> VoterNode:
    return VoterNode(key, Endpoints.of([Endpoint("CONTROLLER", "localhost", port)]), SupportedVersionRange(0, 1))


def voter_sets(min_size: int = 1) -> st.SearchStrategy[VoterSet]:
    return st.lists(keys, min_size=min_size, max_size=6, unique_by=lambda k: k.id).map(
        lambda ks: VoterSet.of(node(k) for k in ks)
    )


@given(voter_sets(), keys)
def test_add_voter_matches_naive_model(voters: VoterSet, key: ReplicaKey) -> None:
    result = add_voter(voters, node(key))
    if key.id in {k.id for k in voters.keys()}:
        assert result is VoterSetError.DUPLICATE_ID
    else:
        assert isinstance(result, VoterSet) and result.keys() == voters.keys() | {key}
        assert voters.has_overlapping_majority(result)


@given(voter_sets(), keys)
def test_remove_voter_matches_naive_model(voters: VoterSet, key: ReplicaKey) -> None:
    result = remove_voter(voters, key)
    if key not in voters.keys():
        assert result is VoterSetError.NOT_FOUND
    elif len(voters) == 1:
        assert result is VoterSetError.LAST_VOTER
    else:
        assert isinstance(result, VoterSet) and result.keys() == voters.keys() - {key}
        assert result.majority() == (len(voters) - 1) // 2 + 1


@given(voter_sets(), keys, st.integers(1000, 2000))
def test_update_voter_replaces_endpoints_only_for_matching_key(voters: VoterSet, key: ReplicaKey, port: int) -> None:
    result = update_voter(voters, node(key, port))
    if key in voters.keys():
        assert isinstance(result, VoterSet) and result.keys() == voters.keys()
        assert result.endpoints_of(key.id).address("CONTROLLER") == Endpoint("CONTROLLER", "localhost", port)
    else:
        assert result is VoterSetError.NOT_FOUND


def test_voter_without_directory_matches_any_directory() -> None:
    voters = VoterSet.of([node(ReplicaKey(1))])
    assert voters.is_voter(ReplicaKey(1, DIRS[0]))
    strict = VoterSet.of([node(ReplicaKey(1, DIRS[0]))])
    assert strict.is_voter(ReplicaKey(1, DIRS[0])) and not strict.is_voter(ReplicaKey(1, DIRS[1]))
    assert not strict.is_voter(ReplicaKey(1))


@given(voter_sets(), voter_sets())
def test_overlapping_majority_means_every_majority_pair_intersects(a: VoterSet, b: VoterSet) -> None:
    if a.has_overlapping_majority(b):
        # naive check: the two smallest majorities cannot be disjoint
        assert a.majority() + b.majority() > len(a.keys() | b.keys())


@given(voter_sets())
def test_voters_record_round_trip(voters: VoterSet) -> None:
    assert VoterSet.from_voters_record(voters.to_voters_record()) == voters


@settings(max_examples=300)
@given(voter_sets(), voter_sets(), st.data())
def test_planner_reaches_target_through_single_changes(current: VoterSet, target: VoterSet, data) -> None:
    leader = data.draw(st.sampled_from(sorted(current.ids())))
    for _ in range(4 * (len(current) + len(target)) + 4):
        step = next_step(current, target, leader)
        if step is None:
            assert current.keys() == target.keys()
            return
        if isinstance(step, Blocked):
            # Only possible when a single remaining voter would have to go and nothing can be added first.
            assert len(current) == 1 and all(k.id in current.ids() for k in target.keys() - current.keys())
            return
        if isinstance(step, ResignLeaderStep):
            assert step.key.id == leader and len(current) > 1
            leader = data.draw(st.sampled_from(sorted(current.ids() - {leader})))
            continue
        if isinstance(step, AddVoterStep):
            result = add_voter(current, step.node)
        else:
            assert isinstance(step, RemoveVoterStep) and step.key.id != leader
            result = remove_voter(current, step.key)
        assert isinstance(result, VoterSet)
        assert len(result.keys() ^ current.keys()) == 1 and current.has_overlapping_majority(result)
        current = result
    raise AssertionError("planner did not converge")


def test_planner_adds_before_removing_when_target_not_smaller() -> None:
    a, b, c, d = (ReplicaKey(i, DIRS[0]) for i in range(4))
    step = next_step(VoterSet.of(map(node, [a, b, c])), VoterSet.of(map(node, [a, b, d])), leader_id=0)
    assert step == AddVoterStep(node(d))


def test_planner_removes_first_when_shrinking_and_leader_last() -> None:
    a, b, c = (ReplicaKey(i, DIRS[0]) for i in range(3))
    current = VoterSet.of(map(node, [a, b, c]))
    assert next_step(current, VoterSet.of([node(c)]), leader_id=0) == RemoveVoterStep(b)
    assert next_step(VoterSet.of(map(node, [a, c])), VoterSet.of([node(c)]), leader_id=0) == ResignLeaderStep(a)


def test_planner_unchanged_target_is_noop() -> None:
    voters = VoterSet.of([node(ReplicaKey(1, DIRS[0]))])
    assert next_step(voters, voters, leader_id=1) is None


def test_planner_replaces_directory_by_remove_then_add() -> None:
    old, new, other = ReplicaKey(1, DIRS[0]), ReplicaKey(1, DIRS[1]), ReplicaKey(2, DIRS[0])
    current = VoterSet.of([node(old), node(other)])
    assert next_step(current, VoterSet.of([node(new), node(other)]), leader_id=2) == RemoveVoterStep(old)
