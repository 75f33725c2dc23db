"""Reconfiguration (KIP-853) hooks the core calls after every input and on every high-watermark advance (the
AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter requests and answers are routed by dispatch.py).

The numbered algorithms are in add_voter.py, remove_voter.py and update_voter.py (leader side) and
follower_membership.py (UpdateVoter sending and auto-join); the shared steps in membership.py; quorum
reassignment (KIP-642, driven by the leader from the target in its log) in reassign_voters.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.handlers import membership, quorum_epoch, reassign_voters
from pykraft.raft.states import ResignedState

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


# ---- hooks ---------------------------------------------------------------------------------------------------
def on_high_watermark(core: RaftCore, now_ms: int) -> None:
    """The leader's high watermark advanced: a pending change whose record it passed is answered now."""
    membership.settle_pending(core, now_ms)


def after_input(core: RaftCore, now_ms: int) -> None:
    """Run at the end of every input, like Kafka's next pollLeader: settle the pending change (commit, timeout,
    failed probe, lost leadership) and resign if this leader's own removal has committed."""
    membership.settle_pending(core, now_ms)
    resign_if_removed(core, now_ms)
    reassign_voters.drive(core, now_ms)
    reassign_voters.settle_waiters(core, now_ms)


def resign_if_removed(core: RaftCore, now_ms: int) -> None:
    """A leader that is not in the voter set resigns once that voter set is committed (before, it must keep
    serving fetches so that the removal can commit). Deferred to the end of the input so that the Fetch answer
    that carried the new high watermark goes out first."""
    leader = core.leader_state()
    if leader is None or leader.is_local_voter() or leader.high_watermark is None:
        return
    offset = core.history.last_voter_set_offset()
    if offset is None or offset >= leader.high_watermark:
        return
    core.resign_leadership(now_ms)
    state = core.quorum.state
    if isinstance(state, ResignedState):
        quorum_epoch.send_end_quorum_epoch(core, state, now_ms)


def next_deadline_ms(core: RaftCore) -> int | None:
    """When the pending change or a waiting reassignment request times out (the follower side needs no timer: it
    rides on fetch answers)."""
    pending = core.reconfig.pending
    deadlines = [d for d in (pending.deadline_ms if pending is not None else None,
                             reassign_voters.next_deadline_ms(core)) if d is not None]
    return min(deadlines) if deadlines else None
