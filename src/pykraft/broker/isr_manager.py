"""The KIP-497 ISR manager: the leader side of AlterPartition for every partition this broker leads.

Inputs: `sync_metadata` after the metadata cache applied new records; `update_progress` from the data plane;
`poll` for timers; `handle_response` / `handle_failure` for the AlterPartition it sent. Each returns a `Ready`.
The rules themselves (shrink, expand, high watermark) are in isr_rules.py. Here:

- a partition left RECOVERING by an unclean election is first reported RECOVERED (its ISR unchanged);
- at most one proposal per partition at a time, and at most one AlterPartition request in flight for the whole
  broker (as Kafka's AlterPartitionManager): proposals made meanwhile wait and all go together in the next one
  (v3, NewIsrWithEpochs, grouped by topic id);
- metadata newer than a proposal's base (partition epoch or leader epoch) discards it: the controller or another
  leader changed the partition, and the next evaluation starts from the new committed state;
- answers: NONE -> adopt the returned leader/ISR/epochs when newer than the cache; INELIGIBLE_REPLICA (or
  OPERATION_NOT_ATTEMPTED) -> back to the committed ISR, and the replicas it tried to add are not proposed
  again until the cache replays a change of any of their registrations, or for `ineligible_retry_ms` at most
  (the answer does not say which member was refused, and the controller's reason may never reach the cache: a
  fence it wrote but did not commit before losing its leadership; Kafka's leader simply tries again at the next
  fetch) (a shrink rejected so waits for the partition to
  change); FENCED_LEADER_EPOCH, NEW_LEADER_ELECTED, INVALID_UPDATE_VERSION, INVALID_REQUEST, unknown topic or
  partition -> never re-sent, wait for metadata; NOT_CONTROLLER and other retriable errors, top-level errors,
  a missing partition, timeouts and undeliverable requests -> the same proposal again after the retry backoff
  (FindController first when the controller is the problem). A proposal not yet sent (or waiting for its
  retry) whose newcomer the cache no longer shows eligible is dropped instead of sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kio.schema.alter_partition.v3 import request as ap_req
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.controller.partitions import LeaderRecoveryState
from pykraft.protocol.errors import ErrorCode

from . import isr_rules as rules
from .actions import Action, FindController, IsrChange, Ready, SendToController, earliest
from .isr_rules import Committed, LeaderProgress, Proposal, ProposalKind, ProposalState
from .metadata_cache import MetadataCache, TopicPartition

ALTER_PARTITION = 56
_REJECTED_AS_INELIGIBLE = frozenset({ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED})
# Checked before "retriable": Kafka marks several of these retriable (stale metadata), but resending the same
# proposal cannot succeed until the metadata that overtook it arrives.
_WAIT_FOR_METADATA = frozenset({
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NEW_LEADER_ELECTED, ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_LEADER_OR_FOLLOWER})
_RETRY = frozenset({ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR})


@dataclass(frozen=True, slots=True)
class IsrManagerConfig:
    broker_id: int
    replica_lag_time_max_ms: int = rules.DEFAULT_REPLICA_LAG_TIME_MAX_MS
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100
    ineligible_retry_ms: int = 1000  # how long replicas refused as INELIGIBLE_REPLICA wait at most


@dataclass(frozen=True, slots=True)
class IsrMetrics:
    """Kafka's ReplicaManager IsrShrinksPerSec / IsrExpandsPerSec / FailedIsrUpdatesPerSec, as counts."""

    isr_shrinks: int = 0
    isr_expands: int = 0
    failed_isr_updates: int = 0


@dataclass(slots=True)
class _Led:
    """What the manager keeps for one partition it leads (mutable, private)."""

    leader_epoch: int
    leader_since_ms: int
    progress: LeaderProgress | None = None
    adopted: Committed | None = None  # an answer newer than the cache
    proposal: Proposal | None = None
    high_watermark: int | None = None


@dataclass(frozen=True, slots=True)
class _Refused:
    """The members an INELIGIBLE_REPLICA answer refused, each with the cache's registration object when proposed."""

    seen: tuple[tuple[int, object], ...]
    until_ms: int


@dataclass(frozen=True, slots=True)
class _InFlight:
    request_id: int
    deadline_ms: int
    proposals: Mapping[TopicPartition, Proposal] = field(default_factory=dict)


class IsrManager:
    def __init__(self, config: IsrManagerConfig, cache: MetadataCache) -> None:
        self.config = config
        self.cache = cache
        self.metrics = IsrMetrics()
        self._led: dict[TopicPartition, _Led] = {}
        self._ineligible: dict[int, _Refused] = {}  # replica -> the refusal holding it back
        self._now_ms = 0  # the time of the input being handled (the eligibility callback has no time argument)
        self._in_flight: _InFlight | None = None
        self._next_request_id = 0
        self._changes: list[Action] = []  # IsrChange notes, handed out with the next Ready

    # ---- queries -------------------------------------------------------------------------------------------
    def led_partitions(self) -> list[TopicPartition]:
        return list(self._led)

    def committed(self, tp: TopicPartition) -> Committed | None:
        led = self._led.get(tp)
        partition = self.cache.partition(*tp)
        if led is None or partition is None:
            return None
        cached = Committed.of(partition)
        adopted = led.adopted
        if adopted is not None and adopted.leader_epoch == cached.leader_epoch \
                and adopted.partition_epoch > cached.partition_epoch:
            return adopted
        return cached

    def proposal(self, tp: TopicPartition) -> Proposal | None:
        led = self._led.get(tp)
        return None if led is None else led.proposal

    def maximal_isr(self, tp: TopicPartition) -> tuple[int, ...]:
        committed = self.committed(tp)
        return () if committed is None else rules.maximal_isr(committed, self._led[tp].proposal)

    def high_watermark(self, tp: TopicPartition) -> int | None:
        """From the maximal ISR; never lower than a value given before in the same leadership."""
        led = self._led.get(tp)
        return None if led is None else led.high_watermark

    # ---- inputs ----------------------------------------------------------------------------------------------
    def sync_metadata(self, now_ms: int) -> Ready:
        """The cache applied new records: follow leadership changes, drop proposals the metadata overtook."""
        me = self.config.broker_id
        led_now = self.cache.partitions_led_by(me)
        for tp in [tp for tp in self._led if tp not in led_now]:
            del self._led[tp]
        for tp, partition in led_now.items():
            led = self._led.get(tp)
            if led is None or led.leader_epoch != partition.leader_epoch:
                self._led[tp] = _Led(partition.leader_epoch, now_ms)
                continue
            committed = self.committed(tp)
            assert committed is not None
            if led.adopted is not None and committed is not led.adopted:
                led.adopted = None  # the cache caught up (or moved past it)
            if led.proposal is not None and led.proposal.base.is_older_than(committed):
                led.proposal = None
        self._now_ms = now_ms
        for replica in [r for r in self._ineligible if not self._held_back(r)]:
            del self._ineligible[replica]
        return self._evaluate_all(now_ms, [])

    def update_progress(self, progress: Mapping[TopicPartition, LeaderProgress], now_ms: int) -> Ready:
        """New data-plane progress for some led partitions (any number: the proposals go out together)."""
        for tp, p in progress.items():
            led = self._led.get(tp)
            if led is not None and p.leader_epoch == led.leader_epoch:
                led.progress = p
        return self._evaluate_all(now_ms, [])

    def poll(self, now_ms: int) -> Ready:
        actions: list[Action] = []
        if self._in_flight is not None and now_ms >= self._in_flight.deadline_ms:
            actions.append(FindController())
            self._requeue_in_flight(now_ms)
        return self._evaluate_all(now_ms, actions)

    def handle_failure(self, request_id: int, now_ms: int) -> Ready:
        if self._in_flight is not None and self._in_flight.request_id == request_id:
            self._requeue_in_flight(now_ms)
        return self._evaluate_all(now_ms, [])

    def handle_response(self, request_id: int, response: object, now_ms: int) -> Ready:
        self._now_ms = now_ms
        in_flight = self._in_flight
        if in_flight is None or in_flight.request_id != request_id:
            return self._evaluate_all(now_ms, [])
        actions: list[Action] = []
        top = _error_of(response) if getattr(response, "__api_key__", None) == ALTER_PARTITION else None
        if top is not ErrorCode.NONE:
            if top is ErrorCode.NOT_CONTROLLER:
                actions.append(FindController())
            self._requeue_in_flight(now_ms)
            return self._evaluate_all(now_ms, actions)
        self._in_flight = None
        answered: dict[TopicPartition, object] = {}
        for topic in getattr(response, "topics", ()):
            for data in getattr(topic, "partitions", ()):
                answered[(topic.topic_id, int(data.partition_index))] = data
        for tp, sent in in_flight.proposals.items():
            data = answered.get(tp)
            if data is None:
                self._retry(tp, sent, now_ms)
            elif self._on_partition_answer(tp, sent, data, now_ms):
                actions.append(FindController())
        return self._evaluate_all(now_ms, actions[:1])

    # ---- answers ---------------------------------------------------------------------------------------------
    def _on_partition_answer(self, tp: TopicPartition, sent: Proposal, data: object, now_ms: int) -> bool:
        """Apply one partition's answer; True when it says the controller we reached is not the active one."""
        led = self._led.get(tp)
        current = led is not None and led.proposal is sent
        error = _error_of(data)
        if error is ErrorCode.NONE:
            # Counted even when the metadata carrying the change overtook this answer (the proposal is gone then):
            # the controller applied it either way.
            self._count(sent.kind)
            self._note(tp, sent, "accepted", partition_epoch=int(data.partition_epoch))  # type: ignore[attr-defined]
            if led is not None:
                self._adopt(tp, led, data)
                if current:
                    led.proposal = None
            return False
        self.metrics = replace(self.metrics, failed_isr_updates=self.metrics.failed_isr_updates + 1)
        if not current:
            return False  # metadata already overtook this proposal
        assert led is not None
        if error in _REJECTED_AS_INELIGIBLE:
            self._reject_ineligible(led, sent)
        elif error not in _WAIT_FOR_METADATA and (error in _RETRY or error.retriable):
            self._retry(tp, sent, now_ms)
            return error is ErrorCode.NOT_CONTROLLER
        else:
            led.proposal = replace(sent, state=ProposalState.AWAITING_METADATA)
        self._note(tp, sent, "refused", error=error)
        return False

    def _note(self, tp: TopicPartition, proposal: Proposal, outcome: str, *, partition_epoch: int = -1,
              error: ErrorCode | None = None) -> None:
        self._changes.append(IsrChange(tp[0], tp[1], proposal.kind.value, proposal.base.isr, proposal.isr, outcome,
                                       partition_epoch, error))

    def _adopt(self, tp: TopicPartition, led: _Led, data: Any) -> None:
        """Take the controller's answer as committed when it is newer than what the cache shows and keeps us
        leader at the same leader epoch (anything else will come through metadata)."""
        committed = self.committed(tp)
        if committed is None:
            return
        leader, leader_epoch = int(data.leader_id), int(data.leader_epoch)
        partition_epoch = int(data.partition_epoch)
        if leader != self.config.broker_id or leader_epoch != committed.leader_epoch \
                or partition_epoch <= committed.partition_epoch:
            return
        recovery = LeaderRecoveryState.parse(int(data.leader_recovery_state))
        isr = tuple(int(b) for b in data.isr)
        if recovery is None or not set(isr) <= set(committed.replicas) or leader not in isr:
            return  # an answer we cannot believe: wait for metadata instead
        led.adopted = Committed(leader, isr, committed.replicas, leader_epoch, partition_epoch, recovery)

    def _reject_ineligible(self, led: _Led, sent: Proposal) -> None:
        """KIP-841: the controller refused a member; back to the committed ISR. The replicas we tried to add wait
        until the cache replays a change of their registration after the one the proposal was made with. Compared
        by identity with the registration seen when proposing, not by value with the one seen when the answer
        comes: the controller may have fenced the broker and unfenced it again before the answer arrived, and the
        cache may have replayed both (a registration equal in value to the one refused, found by the
        metadata_reassign simulation: the follower was never proposed again). A refused shrink waits for the
        partition to change."""
        if sent.added:
            seen = dict(sent.seen)
            refused = _Refused(tuple((b, seen.get(b, self.cache.registration(b))) for b in sent.added),
                               self._now_ms + self.config.ineligible_retry_ms)
            for replica in sent.added:
                self._ineligible[replica] = refused
            led.proposal = None
        else:
            led.proposal = replace(sent, isr=sent.base.isr, state=ProposalState.AWAITING_METADATA)

    def _retry(self, tp: TopicPartition, sent: Proposal, now_ms: int) -> None:
        led = self._led.get(tp)
        if led is not None and led.proposal is sent:
            led.proposal = replace(sent, state=ProposalState.QUEUED,
                                   not_before_ms=now_ms + self.config.retry_backoff_ms)

    def _requeue_in_flight(self, now_ms: int) -> None:
        in_flight, self._in_flight = self._in_flight, None
        assert in_flight is not None
        for tp, sent in in_flight.proposals.items():
            self._retry(tp, sent, now_ms)

    def _count(self, kind: ProposalKind) -> None:
        m = self.metrics
        if kind is ProposalKind.SHRINK:
            self.metrics = replace(m, isr_shrinks=m.isr_shrinks + 1)
        elif kind is ProposalKind.EXPAND:
            self.metrics = replace(m, isr_expands=m.isr_expands + 1)

    # ---- evaluation and sending ------------------------------------------------------------------------------
    def _evaluate_all(self, now_ms: int, actions: list[Action]) -> Ready:
        self._now_ms = now_ms
        wakeups: list[int | None] = [r.until_ms for r in self._ineligible.values() if r.until_ms > now_ms]
        for tp, led in self._led.items():
            proposal = led.proposal
            if proposal is not None and proposal.state is ProposalState.QUEUED \
                    and not all(self._eligible(b, _fetch_epoch(led, b)) for b in proposal.added):
                # Not sent yet (or to be retried) and a newcomer became ineligible meanwhile: the controller
                # would refuse it, so start again from the committed state.
                led.proposal = None
            wakeups.append(self._evaluate(tp, led, now_ms))
        send = self._maybe_send(now_ms)
        if send is not None:
            actions.append(send)
        if self._changes:
            actions += self._changes
            self._changes = []
        if self._in_flight is not None:
            wakeups.append(self._in_flight.deadline_ms)
        elif self.cache.broker_epoch(self.config.broker_id) is not None:  # else wait for our registration
            wakeups += [led.proposal.not_before_ms for led in self._led.values()
                        if led.proposal is not None and led.proposal.state is ProposalState.QUEUED]
        return Ready(tuple(actions), earliest(*wakeups))

    def _evaluate(self, tp: TopicPartition, led: _Led, now_ms: int) -> int | None:
        """Update the high watermark and propose a shrink or an expansion when due. Returns the next time this
        partition needs a look (a follower about to fall out of sync)."""
        committed = self.committed(tp)
        if committed is None:
            return None
        hwm = rules.isr_high_watermark(rules.maximal_isr(committed, led.proposal), committed.leader, led.progress)
        if hwm is not None:
            led.high_watermark = hwm if led.high_watermark is None else max(led.high_watermark, hwm)
        if led.proposal is not None:
            return None
        if committed.recovery is LeaderRecoveryState.RECOVERING:
            self._propose(tp, led, committed, ProposalKind.RECOVER, committed.isr)
            return None
        lag = self.config.replica_lag_time_max_ms
        stale = rules.out_of_sync(committed, led.progress, led.leader_since_ms, now_ms, lag)
        if stale:
            self._propose(tp, led, committed, ProposalKind.SHRINK, tuple(b for b in committed.isr if b not in stale))
            return None
        if led.progress is not None:
            joining = rules.can_join(committed, led.progress, led.high_watermark, self._eligible)
            if joining:
                self._propose(tp, led, committed, ProposalKind.EXPAND, committed.isr + joining)
                return None
        return rules.next_shrink_check_ms(committed, led.progress, led.leader_since_ms, lag)

    def _eligible(self, replica: int, fetch_epoch: int) -> bool:
        return not self._held_back(replica) and self.cache.is_isr_eligible(replica, fetch_epoch)

    def _held_back(self, replica: int) -> bool:
        """Refused as ineligible, not long ago, and no registration of those refused together changed since."""
        refused = self._ineligible.get(replica)
        return (refused is not None and self._now_ms < refused.until_ms
                and all(self.cache.registration(b) is seen for b, seen in refused.seen))

    def _propose(self, tp: TopicPartition, led: _Led, committed: Committed, kind: ProposalKind,
                 isr: tuple[int, ...]) -> None:
        epochs = rules.member_epochs(isr, committed.leader, self.cache.broker_epoch(self.config.broker_id),
                                     led.progress)
        seen = tuple((b, self.cache.registration(b)) for b in isr if b not in committed.isr)
        led.proposal = Proposal(kind, isr, epochs, committed, seen=seen)
        self._note(tp, led.proposal, "proposed")

    def _maybe_send(self, now_ms: int) -> SendToController | None:
        own_epoch = self.cache.broker_epoch(self.config.broker_id)
        if self._in_flight is not None or own_epoch is None:
            return None
        due = {tp: led.proposal for tp, led in self._led.items() if led.proposal is not None
               and led.proposal.state is ProposalState.QUEUED and led.proposal.not_before_ms <= now_ms}
        if not due:
            return None
        sent = {}
        for tp, proposal in due.items():
            sent[tp] = self._led[tp].proposal = replace(proposal, state=ProposalState.IN_FLIGHT)
        self._next_request_id += 1
        deadline = now_ms + self.config.request_timeout_ms
        self._in_flight = _InFlight(self._next_request_id, deadline, sent)
        return SendToController(self._next_request_id, ALTER_PARTITION, _request(self.config.broker_id, own_epoch,
                                                                                  sent), deadline)


def _request(broker_id: int, broker_epoch: int,
             proposals: Mapping[TopicPartition, Proposal]) -> ap_req.AlterPartitionRequest:
    by_topic: dict[uuid.UUID, list[ap_req.PartitionData]] = {}
    for (topic_id, partition_id), p in proposals.items():
        by_topic.setdefault(topic_id, []).append(ap_req.PartitionData(
            partition_index=i32(partition_id), leader_epoch=i32(p.base.leader_epoch),
            # Our own epoch as of now: a proposal retried across a re-registration must not carry the old one.
            new_isr_with_epochs=tuple(ap_req.BrokerState(broker_id=BrokerId(b),
                                                         broker_epoch=i64(broker_epoch if b == broker_id else e))
                                      for b, e in p.member_epochs),
            leader_recovery_state=i8(int(LeaderRecoveryState.RECOVERED if p.kind is ProposalKind.RECOVER
                                         else p.base.recovery)),
            partition_epoch=i32(p.base.partition_epoch)))
    return ap_req.AlterPartitionRequest(
        broker_id=BrokerId(broker_id), broker_epoch=i64(broker_epoch),
        topics=tuple(ap_req.TopicData(topic_id=t, partitions=tuple(ps)) for t, ps in by_topic.items()))


def _fetch_epoch(led: _Led, replica: int) -> int:
    follower = None if led.progress is None else led.progress.follower(replica)
    return -1 if follower is None else follower.broker_epoch


def _error_of(message: object) -> ErrorCode:
    try:
        return ErrorCode.of(int(getattr(message, "error_code", -1)))
    except (TypeError, ValueError):
        return ErrorCode.UNKNOWN_SERVER_ERROR
