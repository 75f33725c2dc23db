"""The steps every leader-side voter change shares (KIP-853, reference §1.8), and the life cycle of the one
pending AddVoter/RemoveVoter: answered when its VotersRecord commits, when it times out, or when the
leadership that accepted it ends.

"At most one uncommitted voter change" holds because every path that appends a VotersRecord (AddVoter,
RemoveVoter, UpdateVoter, the kraft.version upgrade) first passes `change_blocked`, which refuses while a change
is pending or while the last VotersRecord is at or above the high watermark. The start-of-epoch VotersRecord
is covered too: nothing else may be appended before the epoch's first batch commits (HWM unknown until then).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.effects import Respond
from pykraft.raft.leader import LeaderState
from pykraft.raft.voter_change import ChangeKind, PendingVoterChange
from pykraft.raft.voter_set import VoterSet

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore

Refusal = tuple[ErrorCode, str]


def leader_error(core: RaftCore, request_epoch: int | None = None) -> ErrorCode | None:
    """`validateLeaderOnlyRequest`: Add/RemoveVoter carry no epoch (the local one is used), UpdateVoter does."""
    epoch = core.quorum.epoch if request_epoch is None else request_epoch
    if epoch < core.quorum.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if epoch > core.quorum.epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if core.leader_state() is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if core.shutdown_deadline_ms is not None:
        return ErrorCode.BROKER_NOT_AVAILABLE
    return None


def change_blocked(core: RaftCore, leader: LeaderState, *, kraft0_allowed: bool = False) -> Refusal | None:
    """The shared preconditions, in the order of §1.8: pending change, HWM known, kraft.version >= 1, no
    uncommitted VotersRecord."""
    if core.reconfig.pending is not None:
        return ErrorCode.REQUEST_TIMED_OUT, "a voter change is already in progress"
    if leader.high_watermark is None:
        return ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed its epoch yet (previous leaders not fenced)"
    if core.history.last_kraft_version() < 1 and not kraft0_allowed:
        return ErrorCode.UNSUPPORTED_VERSION, "kraft.version 0 does not support voter changes"
    if has_uncommitted_voter_change(core, leader):
        return ErrorCode.REQUEST_TIMED_OUT, "the last voter change has not committed yet"
    return None


def has_uncommitted_voter_change(core: RaftCore, leader: LeaderState) -> bool:
    offset = core.history.last_voter_set_offset()
    return offset is not None and (leader.high_watermark is None or offset >= leader.high_watermark)


def append_voters_record(core: RaftCore, leader: LeaderState, voters: VoterSet, now_ms: int,
                         extra_first: tuple[object, ...] = ()) -> int:
    """Append a control batch holding `extra_first` then the VotersRecord; returns the VotersRecord's offset.
    The new set takes effect at once (VoterHistory reads it on append), before it commits."""
    base = leader.accumulator.append_control([*extra_first, voters.to_voters_record()], now_ms)
    core.drain_accumulator(leader, now_ms, force=True)
    return base + len(extra_first)


# ---- the pending change ------------------------------------------------------------------------------------------
def start(core: RaftCore, pending: PendingVoterChange) -> None:
    assert core.reconfig.pending is None
    core.reconfig.pending = pending


def update(core: RaftCore, **changes: object) -> PendingVoterChange:
    pending = core.reconfig.pending
    assert pending is not None
    core.reconfig.pending = replace(pending, **changes)  # type: ignore[arg-type]
    return core.reconfig.pending


def finish(core: RaftCore, error: ErrorCode, message: str | None = None) -> None:
    pending = core.reconfig.pending
    assert pending is not None
    core.reconfig.pending = None
    if pending.kind is ChangeKind.ADD:
        core.emit(Respond(pending.ref, rm.add_voter_response(error, message)))
    else:
        core.emit(Respond(pending.ref, rm.remove_voter_response(error, message)))


def settle_pending(core: RaftCore, now_ms: int) -> None:
    """Answer the pending change if its fate is known: leadership lost, timed out, probe failed, or committed."""
    pending = core.reconfig.pending
    if pending is None:
        return
    leader = core.leader_state()
    if leader is None or leader.epoch != pending.epoch:
        return finish(core, ErrorCode.NOT_LEADER_OR_FOLLOWER, "leadership changed before the voter change finished")
    if pending.is_committed(leader.high_watermark):
        return finish(core, ErrorCode.NONE)
    if now_ms >= pending.deadline_ms:
        return finish(core, ErrorCode.REQUEST_TIMED_OUT, "the voter change did not finish in time")
    if pending.api_versions_from is not None and not core.requests.has_inflight(pending.api_versions_from):
        # The probe is no longer in flight and no answer came: the request manager expired it (send failure).
        core.reconfig.failed_probes += 1
        return finish(core, ErrorCode.REQUEST_TIMED_OUT, "the new voter did not answer ApiVersions")
    return None
