"""Quorum reassignment planner (KIP-642's goal on top of KIP-853's single-voter changes).

`next_step(current, target, leader_id)` is pure and stateless: the admin tool calls it again after every
completed step with the voter set it observes now, so a new target simply replaces the old one and an unchanged
target (current == target) yields None. Each step changes the voter set by exactly one key, so every pair of
consecutive sets has overlapping majorities.

Rules, in order:
1. When the target is not smaller than the current set, add before removing (the quorum never shrinks below
   what it needs); otherwise remove first.
2. A key whose id is still a voter under another directory id cannot be added yet (ids are unique): the old key is
   removed first.
3. Non-leaders are removed before the leader; removing the leader is preceded by a `ResignLeader` step so that the
   removal is done by a successor.
4. A set of one voter cannot lose that voter: if the only way forward is removing the last voter, `Blocked`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.raft.voter_set import ReplicaKey, VoterNode, VoterSet


@dataclass(frozen=True, slots=True)
class AddVoterStep:
    node: VoterNode


@dataclass(frozen=True, slots=True)
class RemoveVoterStep:
    key: ReplicaKey


@dataclass(frozen=True, slots=True)
class ResignLeaderStep:
    """The leader must step down (RaftCore.resign) before it can be removed by its successor."""

    key: ReplicaKey


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str


Step = AddVoterStep | RemoveVoterStep | ResignLeaderStep | Blocked


def next_step(current: VoterSet, target: VoterSet, leader_id: int | None) -> Step | None:
    current_keys, target_keys = current.keys(), target.keys()
    if current_keys == target_keys:
        return None
    # Additions whose id is free right now, in id order for determinism.
    free_adds = sorted(k for k in target_keys - current_keys if k.id not in current.voters)
    removals = sorted(current_keys - target_keys, key=lambda k: (k.id == leader_id, k))
    grow_first = len(target_keys) >= len(current_keys)
    if free_adds and (grow_first or not removals):
        node = target.voters[free_adds[0].id]
        return AddVoterStep(node)
    if removals:
        key = removals[0]
        if len(current_keys) == 1:
            return Blocked(f"cannot remove {key}: it is the last voter")
        if key.id == leader_id:
            return ResignLeaderStep(key)
        return RemoveVoterStep(key)
    # Only blocked additions remain, which implies removals exist; unreachable but kept total.
    return Blocked("no applicable step")
