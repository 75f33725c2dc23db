"""RaftCore: the dispatcher the runtime drives. Inputs carry `now_ms`; every input returns `Ready`.

Inputs: `initialize`, `handle_request(ref, request, now_ms)`, `handle_response(source_id, correlation_id,
response, now_ms)`, `poll(now_ms)`, `append(values, now_ms)`, `on_log_flushed(end_offset, now_ms)`,
`resign(now_ms)`, `shutdown(now_ms, timeout_ms)`. Handlers for each RPC family live in `handlers/`.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter
from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import kraft_upgrade, messages, timers
from pykraft.raft.handlers import reassign_voters, reconfig
from pykraft.raft.handlers.dispatch import dispatch_request, dispatch_response
from pykraft.raft.handlers.fetch import complete_parked_fetches, fail_parked_fetches
from pykraft.raft.handlers.vote import maybe_win_prospective
from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.config import MAX_PEER_EPOCH, LocalReplica, QuorumConfig
from pykraft.raft.effects import Destination, Effect, FlushLog, Ready, Send, ShutdownComplete
from pykraft.raft.election import ElectionState
from pykraft.raft.leader import LeaderState
from pykraft.raft.listener import ListenerProgress
from pykraft.raft.log import InvalidSnapshotIdError, OffsetAndEpoch, ReplicatedLog, SnapshotId
from pykraft.raft.quorum_state import QuorumState
from pykraft.raft.requests import RequestManager
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.states import NEVER, CandidateState, FollowerState, ProspectiveState, ResignedState, Role, UnattachedState
from pykraft.raft.voter_change import ReconfigState
from pykraft.raft.voter_history import VoterHistory
from pykraft.raft.voter_set import Endpoints, ReplicaKey, VoterNode, VoterSet, VoterSetError, update_voter


class NotLeaderError(Exception):
    """`append` on a node that is not the leader (or with a stale epoch)."""


class RaftCore:
    def __init__(self, local: LocalReplica, config: QuorumConfig, log: ReplicatedLog, rng: random.Random) -> None:
        self.local = local
        self.config = config
        self.log = log
        self.rng = rng
        self.history = VoterHistory(local.static_voters)
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms)
        self.listener = ListenerProgress()
        self._out: list[Effect] = []
        self.quorum = QuorumState(local, config, rng, self.history.last_voter_set, self.history.last_kraft_version,
                                  self._out.append, on_transition=self.requests.reset,
                                  voters_before_uncommitted=self.history.voters_before_uncommitted)
        self.parked_fetches: list[tuple[Hashable, Any, int]] = []  # (ref, request, expiry)
        self.shutdown_deadline_ms: int | None = None
        self.bad_control_records = 0
        self.dropped_responses = 0
        self.conflicting_leader_claims = 0  # messages naming another leader of the epoch this node leads
        self.rejected_snapshot_chunks = 0  # FetchSnapshot answers that did not continue the download
        self.unsupported_requests = 0  # requests for APIs the raft core does not serve (counted, not answered)
        self.refused_epochs = 0  # peer messages naming an epoch above MAX_PEER_EPOCH (ignored)
        self.leader_unreachable = 0  # refused or reset connections to the leader a voter followed (hastened pre-votes)
        self.reconfig = ReconfigState()  # voter changes in progress (KIP-853), see handlers/reconfig.py

    # ---- plumbing --------------------------------------------------------------------------------------------
    def emit(self, effect: Effect) -> None:
        self._out.append(effect)

    def _ready(self, now_ms: int) -> Ready:
        reconfig.after_input(self, now_ms)
        self.maybe_complete_shutdown(now_ms)
        if not self._follower_flush_due():
            self.listener.deliver(self, now_ms)
        effects, self._out[:] = tuple(self._out), []
        return Ready(effects, self._next_wakeup(now_ms))

    def _follower_flush_due(self) -> bool:
        """Whether this output asks a follower's log to be flushed. Its newly committed records are then listed on
        the flush's completion (`on_log_flushed`, an input the host always feeds after a FlushLog) instead of now:
        the follower's next Fetch waits for that fsync, and reading and copying them here delayed it (idle: ~30 us
        of the ~0.13 ms the core spent on a Fetch answer). The state machine sees them in the same order, only
        later; they were handed over after the fsync before too. Not while shutting down: the host may stop feeding
        inputs once the shutdown completes."""
        return isinstance(self.quorum.state, FollowerState) and self.shutdown_deadline_ms is None \
            and any(type(effect) is FlushLog for effect in self._out)

    def voters(self) -> VoterSet:
        return self.history.last_voter_set()

    def send(self, destination: Destination, request: Any, now_ms: int) -> None:
        correlation = self.requests.on_send(destination.node_id, now_ms)
        self.emit(Send(destination, correlation, request))

    def destination_of(self, node_id: int, endpoints: Endpoints | None = None) -> Destination:
        endpoints = endpoints if endpoints is not None else self.voters().endpoints_of(node_id)
        address = endpoints.address(self.local.listener_name)
        return Destination(node_id, address.host, address.port) if address else Destination(node_id)

    def leader_endpoints_field(self, cls: type) -> tuple[Any, ...]:
        leader = self.quorum.leader_id()
        if leader is None:
            return ()
        endpoints = self.local.endpoints if leader == self.local.node_id else self.quorum.state.leader_endpoints
        if endpoints is None:  # a state that does not track them: the voter set's entry
            endpoints = self.voters().endpoints_of(leader)
        return messages.node_endpoints(cls, leader, endpoints, self.local.listener_name)

    @property
    def high_watermark(self) -> int | None:
        return self.quorum.high_watermark

    def leader_state(self) -> LeaderState | None:
        state = self.quorum.state
        return state if isinstance(state, LeaderState) else None

    # ---- inputs ----------------------------------------------------------------------------------------------
    def initialize(self, stored: ElectionState | None, now_ms: int) -> Ready:
        self.reload_history()
        self.quorum.initialize(stored, self.log.last_fetched_epoch(), now_ms)
        key = self.local.key
        if key is not None and self.local.can_become_voter and self.voters().is_only_voter(key) \
                and self.quorum.role is Role.UNATTACHED:
            self.start_election(now_ms)
        if self.quorum.role is Role.UNATTACHED and not self.quorum.is_voter():
            # An Unattached observer has no timer that would ever fire: like Kafka's first poll after start-up, it
            # asks the bootstrap servers for the leader now (later requests are paced by their timeouts/backoff).
            timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    def reload_history(self) -> None:
        """Rebuild the voter history from the latest snapshot and the log (start-up, snapshot installed)."""
        self.history.reset()
        snapshot_id = self.log.latest_snapshot_id()
        if snapshot_id is not None:
            reader = self.log.read_snapshot(snapshot_id)
            if reader is not None:
                self.bad_control_records += self.history.apply_snapshot(reader.records(), snapshot_id)
        start, end = self.log.start_offset(), self.log.end_offset()
        if end > start:
            self.bad_control_records += self.history.apply_batches(self.log.read(start, 2**62).records)

    def handle_request(self, ref: Hashable, request: Any, now_ms: int) -> Ready:
        dispatch_request(self, ref, request, now_ms)
        # Like Kafka's loop, the current state is polled after every message: a node that just became a follower
        # sends its first Fetch now, not at its next timer.
        timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    def handle_response(self, source_id: int, correlation_id: int, response: Any, now_ms: int) -> Ready:
        if self.requests.on_response(source_id, correlation_id, now_ms):
            dispatch_response(self, source_id, response, now_ms)
        else:
            self.dropped_responses += 1
        timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    def append(self, values: Sequence[bytes], now_ms: int, epoch: int | None = None) -> tuple[int, Ready]:
        leader = self._writable_leader(epoch)
        offset = leader.accumulator.append(values, now_ms)
        self.drain_accumulator(leader, now_ms)
        return offset, self._ready(now_ms)

    def append_encoded(self, batches: Sequence[tuple[bytes | memoryview, int]], now_ms: int,
                       epoch: int | None = None) -> tuple[int, Ready]:
        """Append (batch, record count) pairs a client encoded, as they are (BatchAccumulator.append_encoded), all
        or none; returns the offset of the last record. They are written at once, not held for the linger: the
        durability lane's group commit already covers every append made while an fsync runs."""
        leader = self._writable_leader(epoch)
        for batch, _ in batches:
            leader.accumulator.check_encoded_size(len(batch))
        offset = -1
        for batch, count in batches:
            offset = leader.accumulator.append_encoded(batch, count, now_ms)
        self.drain_accumulator(leader, now_ms)
        return offset, self._ready(now_ms)

    def _writable_leader(self, epoch: int | None) -> LeaderState:
        leader = self.leader_state()
        if leader is None or (epoch is not None and epoch != leader.epoch) or self.shutdown_deadline_ms is not None:
            raise NotLeaderError(f"not the leader of epoch {epoch if epoch is not None else self.quorum.epoch}")
        return leader

    def create_snapshot(self, snapshot_id: SnapshotId, last_contained_log_time_ms: int,
                        now_ms: int) -> SnapshotWriter | None:
        """A writer for a snapshot of committed data ending at `snapshot_id` (end offset exclusive, epoch of the
        last contained batch). Raises `InvalidSnapshotIdError` when the id is beyond the high watermark, not in
        the log's history or not on a batch boundary; None when it is below the log start or already exists."""
        hwm = self.high_watermark
        if hwm is None or snapshot_id.offset > hwm:
            raise InvalidSnapshotIdError(f"snapshot {snapshot_id} is beyond the high watermark {hwm}")
        if snapshot_id.epoch > self.quorum.epoch:
            raise InvalidSnapshotIdError(f"snapshot {snapshot_id} is beyond the current epoch {self.quorum.epoch}")
        if snapshot_id.offset < self.log.start_offset():
            return None
        raw = self.log.create_new_snapshot(snapshot_id)
        if raw is None:
            return None
        last = snapshot_id.offset - 1
        kraft = self.history.kraft_version_at(last)
        return SnapshotWriter(raw, last_contained_log_time_ms=last_contained_log_time_ms, now_ms=now_ms,
                              kraft_version=kraft, voters=self.history.voter_set_at(last) if kraft >= 1 else None,
                              on_frozen=self._on_snapshot_frozen, target=self.history.target_at(last))

    def _on_snapshot_frozen(self, snapshot_id: SnapshotId) -> None:
        self.log.on_snapshot_frozen(snapshot_id)
        self.history.truncate_old_entries(snapshot_id.offset)

    def latest_snapshot_id(self) -> SnapshotId | None:
        return self.log.latest_snapshot_id()

    def on_log_flushed(self, end_offset: int, now_ms: int) -> Ready:
        leader = self.leader_state()
        if leader is not None and leader.record_local_end(min(end_offset, self.log.end_offset()), now_ms):
            self.on_high_watermark_advanced(now_ms)
        return self._ready(now_ms)

    def on_peer_unreachable(self, node_id: int, now_ms: int) -> Ready:
        """The runtime saw a connection to `node_id` refused or reset: its process is most likely gone (a paused or
        partitioned peer times out instead, and that is not this input). A voter following that node stops counting
        as one that hears from its leader (so it grants pre-votes) and starts a pre-vote after a delay ranked by node
        id among the other voters instead of waiting out fetch.timeout.ms: the lowest goes at once, the next
        election.timeout.ms/4 later, so the survivors, who all see the reset at the same moment, do not split the
        vote. This cannot disturb a live leader: a pre-vote changes no epoch, and followers that still fetch from
        the leader refuse it, so the node falls back to following."""
        state = self.quorum.state
        if (isinstance(state, FollowerState) and state.leader_id == node_id and self.quorum.is_voter()
                and self.shutdown_deadline_ms is None):
            self.leader_unreachable += 1
            state.has_fetched_from_leader = False
            others = sorted({key.id for key in self.voters().keys()} - {node_id})
            rank = others.index(self.local.node_id) if self.local.node_id in others else len(others)
            state.fetch_deadline_ms = min(state.fetch_deadline_ms, now_ms + rank * self.config.election_timeout_ms // 4)
            timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    def poll(self, now_ms: int) -> Ready:
        for node_id in self.requests.expire(now_ms):
            timers.on_request_timeout(self, node_id, now_ms)
        timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    def upgrade_kraft_version(self, version: int, now_ms: int, validate_only: bool = False) -> tuple[int | None, Ready]:
        """Finalize kraft.version (0 -> 1) on the leader: see kraft_upgrade.py. Returns the offset to wait for
        (answer UpdateFeatures once the HWM passes it; None when nothing was written). Raises NotLeaderError, or
        KRaftVersionUpgradeError when refused."""
        if self.leader_state() is None or self.shutdown_deadline_ms is not None:
            raise NotLeaderError(f"not the leader of epoch {self.quorum.epoch}")
        offset = kraft_upgrade.upgrade(self, version, now_ms, validate_only)
        return offset, self._ready(now_ms)

    def quorum_reassignment(self) -> tuple[VoterSet, VoterSet] | None:
        """(voters now, target) of the quorum reassignment this leader drives (handlers/reassign_voters.py), or None."""
        return reassign_voters.progress(self)

    def kraft_version(self) -> int:
        """The latest kraft.version in the log (possibly uncommitted, like Kafka's active controller uses)."""
        return self.history.last_kraft_version()

    def resign(self, now_ms: int) -> Ready:
        if self.leader_state() is not None:
            self.resign_leadership(now_ms)
            timers.poll_state(self, now_ms)  # EndQuorumEpoch goes out now
        return self._ready(now_ms)

    def shutdown(self, now_ms: int, timeout_ms: int) -> Ready:
        self.shutdown_deadline_ms = now_ms + timeout_ms
        if self.leader_state() is not None:
            self.resign_leadership(now_ms)
        timers.poll_state(self, now_ms)
        return self._ready(now_ms)

    # ---- shared actions used by handlers and timers ------------------------------------------------------------
    def maybe_complete_shutdown(self, now_ms: int) -> None:
        if self.shutdown_deadline_ms is None or self.shutdown_deadline_ms >= NEVER:
            return  # not shutting down, or ShutdownComplete was already emitted
        key = self.local.key
        leader = self.quorum.leader_id()
        done = (key is None or not self.local.can_become_voter or not self.voters().is_voter(key)
                or self.voters().is_only_voter(key)
                or (leader is not None and leader != self.local.node_id))
        if done or now_ms >= self.shutdown_deadline_ms:
            self.emit(ShutdownComplete(graceful=done))
            self.shutdown_deadline_ms = NEVER

    def start_election(self, now_ms: int) -> None:
        """Voter election timeout: Prospective first (pre-vote); a sole voter goes straight through."""
        self.quorum.to_prospective(now_ms)
        maybe_win_prospective(self, now_ms)

    def become_leader(self, now_ms: int) -> None:
        candidate = self.quorum.state
        assert isinstance(candidate, CandidateState)
        epoch, key = candidate.epoch, candidate.local_key
        self.log.initialize_leader_epoch(epoch)
        start = self.log.end_offset()
        leader = LeaderState(
            epoch, key, start, self.voters(),
            BatchAccumulator(epoch, start, self.config.append_linger_ms, self.config.max_batch_size_bytes),
            # The HWM starts unknown: a new leader learns it only when a record of its own epoch commits.
            candidate.election.granted(), now_ms + self.config.check_quorum_timeout_ms, now_ms, self.config,
        )
        self.quorum.to_leader(leader)
        self._append_start_of_epoch(leader, now_ms)
        self.requests.reset()

    def _append_start_of_epoch(self, leader: LeaderState, now_ms: int) -> None:
        voters = self.voters()
        # Version 0, voter ids only: Kafka writes LeaderChangeMessage at ControlRecordUtils.
        # LEADER_CHANGE_CURRENT_VERSION (0, in 3.9 through 4.x) and reads every LeaderChange at that version, so a
        # v1 value (with directory ids) fails Kafka's parser. Older pykraft logs hold v1: records/control reads both.
        change = LeaderChangeMessage(
            version=i16(0), leader_id=BrokerId(leader.local_key.id),
            voters=tuple(Voter(voter_id=i32(k)) for k in sorted({k.id for k in voters.keys()})),
            granting_voters=tuple(Voter(voter_id=i32(k)) for k in sorted({k.id for k in leader.granting_voters})),
        )
        control: list[object] = [change]
        kraft = self.history.last_kraft_version()
        # A leader whose own entry is stale (endpoints or supported kraft.version range) updates it (KIP-853).
        me = VoterNode(leader.local_key, self.local.endpoints, self.local.supported_kraft)
        updated = update_voter(voters, me) if voters.needs_update(me) else voters
        if kraft >= 1 and (not self.history.has_voters_record() or updated is not voters):
            assert not isinstance(updated, VoterSetError)
            control.append(KRaftVersionRecord(version=i16(0), k_raft_version=i16(kraft)))
            control.append(updated.to_voters_record())
        leader.accumulator.append_control(control, now_ms)
        self.drain_accumulator(leader, now_ms, force=True)

    def drain_accumulator(self, leader: LeaderState, now_ms: int, force: bool = False) -> None:
        batches = leader.accumulator.drain(now_ms, force=force)
        if not batches:
            return
        data = b"".join(batches)
        self.log.append_as_leader(data, leader.epoch)
        self.bad_control_records += self.history.apply_batches(data)
        if self.voters() is not leader.voters:
            leader.update_voters(self.voters())
        self.emit(FlushLog(self.log.end_offset()))
        complete_parked_fetches(self, now_ms)

    def drain_if_due(self, now_ms: int) -> None:
        leader = self.leader_state()
        if leader is not None:
            self.drain_accumulator(leader, now_ms)

    def on_high_watermark_advanced(self, now_ms: int) -> None:
        hwm = self.high_watermark
        if hwm is not None:
            self.log.update_high_watermark(hwm)
        complete_parked_fetches(self, now_ms)
        reconfig.on_high_watermark(self, now_ms)

    def resign_leadership(self, now_ms: int) -> None:
        leader = self.leader_state()
        assert leader is not None
        preferred = leader.preferred_successors()
        fail_parked_fetches(self, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.quorum.to_resigned(preferred, now_ms)

    def transition_on_epoch(self, epoch: int, leader_id: int | None, endpoints: Endpoints, now_ms: int) -> None:
        """`maybeTransition`: follow a named leader or become Unattached at a higher epoch. Parked fetches of a
        deposed leader are answered afterwards, so that they name the new leader."""
        if epoch > MAX_PEER_EPOCH:
            self.refused_epochs += 1  # no room for the elections after it (config.MAX_PEER_EPOCH)
            return
        if epoch == self.quorum.epoch and self.quorum.role in (Role.LEADER, Role.RESIGNED):
            self.conflicting_leader_claims += 1  # another leader in our own epoch: a peer bug, ignored
            return
        was_leader = self.leader_state() is not None
        self._follow_or_unattach(epoch, leader_id, endpoints, now_ms)
        if was_leader and self.leader_state() is None:
            fail_parked_fetches(self, ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def _follow_or_unattach(self, epoch: int, leader_id: int | None, endpoints: Endpoints, now_ms: int) -> None:
        if leader_id is not None and leader_id >= 0 and leader_id != self.local.node_id:
            if endpoints.is_empty():
                endpoints = self.voters().endpoints_of(leader_id)
            state = self.quorum.state
            if isinstance(state, FollowerState) and state.epoch == epoch:
                if state.leader_id == leader_id and len(endpoints.items) > len(state.leader_endpoints.items):
                    self.quorum.to_follower(epoch, leader_id, endpoints, now_ms)
                return
            if not endpoints.is_empty():
                self.quorum.to_follower(epoch, leader_id, endpoints, now_ms)
                return
            if epoch > self.quorum.epoch:
                self.quorum.to_unattached(epoch, now_ms, leader_id)
            return
        if epoch > self.quorum.epoch:
            self.quorum.to_unattached(epoch, now_ms)

    def last_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.log.end_offset(), self.log.last_fetched_epoch())

    # ---- wake-up --------------------------------------------------------------------------------------------
    def _next_wakeup(self, now_ms: int) -> int:
        state = self.quorum.state
        times = [NEVER]
        times.extend(deadline for deadline in state.deadlines() if deadline is not None)
        if isinstance(state, LeaderState):
            drain = state.accumulator.drain_deadline_ms()
            if drain is not None:
                times.append(drain)
        times.extend(expiry for _, _, expiry in self.parked_fetches)
        deadline = self.requests.next_deadline_ms(now_ms)
        if deadline is not None:
            times.append(deadline)
        if self.shutdown_deadline_ms is not None:
            times.append(self.shutdown_deadline_ms)
        change_deadline = reconfig.next_deadline_ms(self)
        if change_deadline is not None:
            times.append(change_deadline)
        return max(now_ms, min(times))


__all__ = ["RaftCore", "NotLeaderError", "ProspectiveState", "UnattachedState", "ResignedState", "ReplicaKey"]
