"""Quorum reassignment planner (KIP-642's algorithm on top of KIP-853's single-voter changes).

`next_step(current, target, leader_id, ready)` is pure and stateless: the raft leader calls it again after every
committed step with its voter set now (handlers/reassign_voters.py drives it from the target recorded in the
log), so a new target simply replaces the old one and an unchanged target (current == target) yields None. The
simulator's admin tool drives KIP-853's AddVoter/RemoveVoter with it too. Each step changes the voter set by
exactly one key, so every pair of consecutive sets has overlapping majorities.

Rules, in order:
1. KIP-642 step 3: when size(NewVoters) >= size(RemovingVoters) (the target is not smaller than the current set)
   add one of the new voters, else remove one (the quorum never shrinks below what it needs). Among additions,
   one that `ready` says is caught up goes first ("we may choose to add another replica first if it has already
   caught up"); then id order, for determinism.
2. A key whose id is still a voter under another directory id cannot be added yet (ids are unique): the old key is
   removed first.
3. Non-leaders are removed before the leader (KIP-642: "preferably a non-leader voter"); the leader's own removal,
   the last one, is a `ResignLeaderStep`: with KIP-853's semantics the leader appends the VotersRecord without
   itself, keeps serving until it commits, then resigns (EndQuorumEpoch), and its successor goes on.
4. A set of one voter cannot lose that voter: if the only way forward is removing the last voter, `Blocked`.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """The leader is the voter to remove: it removes itself and resigns once that commits (KIP-853)."""

    key: ReplicaKey


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str


Step = AddVoterStep | RemoveVoterStep | ResignLeaderStep | Blocked


def next_step(current: VoterSet, target: VoterSet, leader_id: int | None,
              ready: Callable[[ReplicaKey], bool] | None = None) -> Step | None:
    current_keys, target_keys = current.keys(), target.keys()
    if current_keys == target_keys:
        return None
    # Additions whose id is free right now: caught-up ones first, then in id order for determinism.
    free_adds = sorted((k for k in target_keys - current_keys if k.id not in current.voters),
                       key=lambda k: (ready is not None and not ready(k), k))
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
