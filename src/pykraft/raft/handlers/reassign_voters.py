"""Quorum reassignment as KIP-642 designs it, on KIP-853's one-voter changes: AlterPartitionReassignments naming
`__cluster_metadata` partition 0 (a `ReassignVotersRequest` here), leader side. The target lives in the log as
pykraft's target tag on a VotersRecord that changes no voter (records/control.py: Kafka's parser skips the tag); the
leader drives the quorum towards it. Every record it writes, target or step, is a VotersRecord: one at a time.

Request (`handle_reassign_request`), in order:
 1. Not the leader, shutting down, or its epoch not committed yet -> NOT_LEADER_OR_FOLLOWER (the node answers
    NOT_CONTROLLER: the client looks for the active controller again and retries).
 2. kraft.version 0 (no voter set in the log)                       -> UNSUPPORTED_VERSION.
 3. No target (cancel): without a reassignment in progress          -> NO_REASSIGNMENT_IN_PROGRESS; else the target
    becomes the current voter set (KIP-642: cancelling leaves the quorum with the current voters).
 4. The target in progress sent again is taken as it is (a client retrying after a failover must not be refused
    because a target voter lags meanwhile). Otherwise each target id must be a voter, or a controller the leader
    knows: registered (ControllerRegistration: its endpoints and kraft.version range), fetching as an observer (its
    directory id), with an endpoint on the leader's listener, supporting the finalized kraft.version and caught up
    (at the leader's log end within fetch.timeout.ms); else, as for a bad partition assignment
    -> INVALID_REPLICA_ASSIGNMENT with the reason.
 5. Nothing in progress and the committed voters are the target     -> NONE at once.
 6. A target other than the one in progress replaces it (requests waiting for the old one are answered
    REASSIGNMENT_IN_PROGRESS); it is written at once, or as soon as no VotersRecord is uncommitted. The same
    target again is not written again.
 7. The request waits: NONE once the committed voter set is the target (and no VotersRecord is uncommitted);
    REQUEST_TIMED_OUT at its TimeoutMs (the reassignment goes on); NOT_LEADER_OR_FOLLOWER if the leadership ends.

Steps (`drive`, after every input; KIP-642's "Reassignment Algorithm" from step 2):
 1. Only with no AddVoter/RemoveVoter pending and no uncommitted VotersRecord (so the target record has
    committed): at most one voter-set change is ever uncommitted, the reassignment's or an operator's.
 2. `reassignment.next_step` over the committed voters: add one of NewVoters when size(NewVoters) >=
    size(RemovingVoters), caught-up ones first; else remove one of RemovingVoters, non-leaders first.
 3. An addition waits until that voter is caught up (KIP-853's AddVoter check); then one VotersRecord.
 4. A removal is one VotersRecord. The leader removes itself last, with KIP-853's semantics: it keeps serving until
    the record commits, then resigns (`reconfig.resign_if_removed`); the next leader reads the target back from
    its log and goes on. Any new leader resumes the same way.
 5. Once the committed voters are the target, a VotersRecord with an empty target tag clears it (KIP-642's
    TargetVoters=null).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.voters_record.v0.data import VotersRecord
from kio.static.primitive import i16

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import membership
from pykraft.raft.leader import LeaderState
from pykraft.raft.reassignment import AddVoterStep, Blocked, RemoveVoterStep, ResignLeaderStep, next_step
from pykraft.raft.voter_change import ReassignVotersRequest, ReassignVotersResult, ReassignWaiter
from pykraft.raft.voter_set import ReplicaKey, VoterNode, VoterSet, VoterSetError, add_voter, remove_voter
from pykraft.records.control import VotersRecordWithTarget

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore

NO_TARGET = VotersRecord(version=i16(0), voters=())


class InvalidTarget(Exception):
    """A target id the leader cannot make a voter (the message says why)."""


def _answer(core: RaftCore, ref: Hashable, error: ErrorCode, message: str | None = None) -> None:
    core.emit(Respond(ref, ReassignVotersResult(error, message)))


# ---- the request -----------------------------------------------------------------------------------------------
def handle_reassign_request(core: RaftCore, ref: Hashable, request: ReassignVotersRequest, now_ms: int) -> None:
    leader = core.leader_state()
    if membership.leader_error(core) is not None or leader is None or leader.high_watermark is None:  # step 1
        return _answer(core, ref, ErrorCode.NOT_LEADER_OR_FOLLOWER, "this node is not the active leader")
    if core.history.last_kraft_version() < 1:  # step 2
        return _answer(core, ref, ErrorCode.UNSUPPORTED_VERSION,
                       "kraft.version 0 keeps the voters in configuration: upgrade kraft.version to 1 first")
    active = current_target(core)
    if request.target_ids is None:  # step 3
        if active is None:
            return _answer(core, ref, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no quorum reassignment is in progress")
        target = core.voters()
    elif active is not None and sorted(request.target_ids) == sorted(active.ids()):
        target = active  # the one in progress, sent again (a client retrying): accepted as it was
    else:
        try:
            target = resolve_target(core, leader, request, now_ms)  # step 4
        except InvalidTarget as exc:
            return _answer(core, ref, ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc))
    keys = target.keys()
    if active is None and keys == committed_voters(core, leader).keys() == core.voters().keys():  # step 5
        return _answer(core, ref, ErrorCode.NONE)
    if active is None or active.keys() != keys:  # step 6
        _replace_target(core, leader, target, now_ms)
    deadline = now_ms + max(0, request.timeout_ms)
    core.reconfig.reassign_waiters.append(ReassignWaiter(ref, keys, leader.epoch, deadline))  # step 7
    settle_waiters(core, now_ms)


def resolve_target(core: RaftCore, leader: LeaderState, request: ReassignVotersRequest, now_ms: int) -> VoterSet:
    """The target as voter nodes: voters keep their entry, others become voters from what the leader knows."""
    ids = request.target_ids or ()
    if not ids:
        raise InvalidTarget("the target voter set is empty")
    if len(set(ids)) != len(ids):
        raise InvalidTarget(f"the target {list(ids)} names a node more than once")
    voters = core.voters()
    nodes = [voters.voters[i] if i in voters.voters else _new_voter(core, leader, request, i, now_ms) for i in ids]
    return VoterSet.of(nodes)


def _new_voter(core: RaftCore, leader: LeaderState, request: ReassignVotersRequest, node_id: int,
               now_ms: int) -> VoterNode:
    if node_id < 0:
        raise InvalidTarget(f"{node_id} is not a node id")
    candidate = request.candidates.get(node_id)
    progress = leader.newest_observer(node_id)
    if candidate is None:
        if node_id in request.brokers:
            raise InvalidTarget(f"node {node_id} is a broker, not a controller: only a node whose process.roles "
                                "includes controller can be a voter")
        if progress is not None:
            raise InvalidTarget(f"node {node_id} fetches the metadata log but has not registered as a controller")
        raise InvalidTarget(f"node {node_id} is unknown to the leader: not a voter and not a registered controller")
    if progress is None or progress.key.directory_id is None:
        raise InvalidTarget(f"controller {node_id} does not follow the leader as an observer (no Fetch with a "
                            "directory id): start it with controller.quorum.bootstrap.servers")
    if candidate.endpoints.address(core.local.listener_name) is None:
        raise InvalidTarget(f"controller {node_id} registered no endpoint for the listener {core.local.listener_name}")
    finalized = core.history.last_kraft_version()
    if not candidate.supported_kraft.contains(finalized):
        raise InvalidTarget(f"controller {node_id} does not support kraft.version {finalized}")
    if not leader.caught_up_within(progress.key, now_ms, core.config.fetch_timeout_ms):
        end = progress.end_offset if progress.end_offset is not None else -1
        raise InvalidTarget(f"controller {node_id} is not caught up with the leader (its log end {end}, the "
                            f"leader's {core.log.end_offset()}): let it catch up and try again")
    return VoterNode(progress.key, candidate.endpoints, candidate.supported_kraft)


def _replace_target(core: RaftCore, leader: LeaderState, target: VoterSet, now_ms: int) -> None:
    keys = target.keys()
    replaced = [w for w in core.reconfig.reassign_waiters if w.keys != keys]
    core.reconfig.reassign_waiters = [w for w in core.reconfig.reassign_waiters if w.keys == keys]
    shown = sorted(k.id for k in keys)
    for waiter in replaced:
        _answer(core, waiter.ref, ErrorCode.REASSIGNMENT_IN_PROGRESS,
                f"the target was replaced by {shown} before it was reached")
    core.reconfig.pending_target = (leader.epoch, target)
    _write_pending_target(core, leader, now_ms)


def _may_write(core: RaftCore, leader: LeaderState) -> bool:
    return (leader.high_watermark is not None and core.reconfig.pending is None
            and not membership.has_uncommitted_voter_change(core, leader))


def _write_pending_target(core: RaftCore, leader: LeaderState, now_ms: int) -> None:
    pending = core.reconfig.pending_target
    if pending is None or not _may_write(core, leader):
        return
    core.reconfig.pending_target = None
    _append_with_target(core, leader, pending[1].to_voters_record(), now_ms)


def _append_with_target(core: RaftCore, leader: LeaderState, target: VotersRecord, now_ms: int) -> None:
    """The voters as they are, with the target tag: a VotersRecord that changes no voter."""
    record = VotersRecordWithTarget(core.voters().to_voters_record(), target)
    leader.accumulator.append_control([record], now_ms)
    core.drain_accumulator(leader, now_ms, force=True)
    core.reconfig.reassign_waiting_for = None


def current_target(core: RaftCore) -> VoterSet | None:
    """The target this leader works towards: the one waiting to be written, else the one in its log."""
    _forget_stale_pending(core)
    pending = core.reconfig.pending_target
    if pending is not None:
        return pending[1]
    active = core.history.last_target()
    return None if active is None else active[1]


def committed_voters(core: RaftCore, leader: LeaderState) -> VoterSet:
    hwm = leader.high_watermark
    return core.voters() if hwm is None else core.history.voter_set_at(hwm - 1)


def progress(core: RaftCore) -> tuple[VoterSet, VoterSet] | None:
    """(the voters now, the target) while this leader has a reassignment in progress (ListPartitionReassignments
    reports it as the replicas, the adding and the removing ones); None otherwise or when not the leader."""
    leader = core.leader_state()
    target = current_target(core)
    if leader is None or leader.high_watermark is None or target is None:
        return None
    return core.voters(), target


# ---- the waiting requests ----------------------------------------------------------------------------------------
def settle_waiters(core: RaftCore, now_ms: int) -> None:
    """Answer the requests whose fate is known: leadership lost, target committed as the voter set, or timed out."""
    waiters = core.reconfig.reassign_waiters
    if not waiters:
        return
    leader = core.leader_state()
    reached = None if leader is None else _reached(core, leader)
    waiting = []
    for waiter in waiters:
        if leader is None or leader.epoch != waiter.epoch:
            _answer(core, waiter.ref, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    "the leadership changed; the reassignment goes on under the new leader")
        elif waiter.keys == reached:
            _answer(core, waiter.ref, ErrorCode.NONE)
        elif now_ms >= waiter.deadline_ms:
            _answer(core, waiter.ref, ErrorCode.REQUEST_TIMED_OUT,
                    "the target is not the voter set yet; the reassignment goes on (ListPartitionReassignments "
                    "shows its progress)")
        else:
            waiting.append(waiter)
    core.reconfig.reassign_waiters = waiting


def _reached(core: RaftCore, leader: LeaderState) -> frozenset[ReplicaKey] | None:
    """The committed voter set, once no VotersRecord is uncommitted and no target waits to be written (None
    before): a target record not committed yet (a cancellation, say) could still be lost with this leader."""
    if leader.high_watermark is None or core.reconfig.pending_target is not None \
            or membership.has_uncommitted_voter_change(core, leader):
        return None
    return committed_voters(core, leader).keys()


def next_deadline_ms(core: RaftCore) -> int | None:
    waiters = core.reconfig.reassign_waiters
    return min(w.deadline_ms for w in waiters) if waiters else None


# ---- the steps ---------------------------------------------------------------------------------------------------
def _forget_stale_pending(core: RaftCore) -> None:
    """A target accepted under a leadership that ended was never written: its requests got NOT_LEADER."""
    pending, leader = core.reconfig.pending_target, core.leader_state()
    if pending is not None and (leader is None or leader.epoch != pending[0]):
        core.reconfig.pending_target = None


def drive(core: RaftCore, now_ms: int) -> None:
    """Write a waiting target, or take the next step towards the committed one, if that can be done now."""
    if core.reconfig.pending_target is None and core.history.last_target() is None:
        return
    _forget_stale_pending(core)
    leader = core.leader_state()
    if leader is None or core.shutdown_deadline_ms is not None or not leader.is_local_voter():
        return  # a removed leader only waits to resign; its successor goes on
    if not _may_write(core, leader):  # step 1
        return
    if core.reconfig.pending_target is not None:
        return _write_pending_target(core, leader, now_ms)
    target = core.history.last_target()[1]  # type: ignore[index]
    voters = core.voters()  # committed: no voter change is uncommitted
    window = core.config.fetch_timeout_ms
    step = next_step(voters, target, leader.local_key.id, lambda key: leader.caught_up_within(key, now_ms, window))
    if step is None:  # step 5
        return _append_with_target(core, leader, NO_TARGET, now_ms)
    if isinstance(step, Blocked):
        core.reconfig.reassign_waiting_for = f"blocked: {step.reason}"
        return None
    if isinstance(step, AddVoterStep):  # step 3
        if not leader.caught_up_within(step.node.key, now_ms, window):
            core.reconfig.reassign_waiting_for = f"voter {step.node.key} to catch up"
            return None
        changed = add_voter(voters, step.node)
    else:  # step 4
        assert isinstance(step, (RemoveVoterStep, ResignLeaderStep)), step
        changed = remove_voter(voters, step.key)
    assert not isinstance(changed, VoterSetError), (step, changed)
    membership.append_voters_record(core, leader, changed, now_ms)
    core.reconfig.reassign_steps += 1
    core.reconfig.reassign_waiting_for = None
    return None
