"""KIP-841 as a state machine: brokers register (new incarnations), get fenced and unfenced, enter controlled
shutdown and unregister; leaders send AlterPartition (valid and invalid); admins create and delete topics and
elect leaders; the controller balances leaders. Every record produced is appended to one log.

After every step the log is replayed (encoded and decoded, as a follower reads it), checking after EVERY record:
  1. no fenced, shutting-down or unregistered broker is in an ISR, except as the kept last member of a
     leaderless partition (the rule partition_change.py documents; Kafka's behaviour without ELR);
  2. no such broker leads, and a leader is always in its ISR, and the ISR is within the replicas;
  3. a partition's leader epoch never decreases and its partition epoch grows with every change record.

Broker registration changes are modelled by `BrokerChange` entries in the same log, ordered the way the broker
side writes them: partition changes before the change that fences / shuts down / unregisters / re-registers a
broker, and the unfence change before the elections it enables.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kio.schema.delete_topics.v6 import request as dt
from kio.schema.elect_leaders.v2 import request as el
from kio.static.primitive import i8, i32Timedelta

from pykraft.controller.eligibility import BrokerFacts, StaticEligibility
from pykraft.controller.replication import ReplicationControl
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

from .partition_helpers import alter_v2, alter_v3, creatable, create_request

BROKER_IDS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class BrokerChange:
    broker_id: int
    facts: BrokerFacts | None  # None: unregistered


class Follower:
    """Replays the log entry by entry and checks the invariants after each one."""

    def __init__(self) -> None:
        self.control = ReplicationControl(random.Random(0))
        self.facts: dict[int, BrokerFacts] = {}
        self.applied = 0

    def catch_up(self, log: list) -> None:
        for entry in log[self.applied:]:
            if isinstance(entry, BrokerChange):
                self._apply_broker(entry)
                self.check_all()
            else:
                self._apply_record(decode_metadata_record(encode_metadata_record(entry)))
        self.applied = len(log)

    def _apply_broker(self, change: BrokerChange) -> None:
        if change.facts is None:
            self.facts.pop(change.broker_id, None)
        else:
            self.facts[change.broker_id] = change.facts

    def _apply_record(self, record) -> None:
        before = None
        if isinstance(record, PartitionChangeRecordV2):
            before = self.control.partition(record.topic_id, int(record.partition_id))
        self.control.replay(record)
        if hasattr(record, "partition_id"):
            after = self.control.partition(record.topic_id, int(record.partition_id))
            self.check_partition(after)
            if before is not None:
                assert after.leader_epoch >= before.leader_epoch
                assert after.partition_epoch == before.partition_epoch + 1
        elif not hasattr(record, "name"):  # a RemoveTopicRecord can only make things better; check anyway
            self.check_all()

    def view(self) -> StaticEligibility:
        return StaticEligibility(dict(self.facts))

    def check_all(self) -> None:
        for topic in self.control.topics.values():
            for partition in topic.partitions.values():
                self.check_partition(partition)

    def check_partition(self, p) -> None:
        view = self.view()
        assert set(p.isr) <= set(p.replicas), p
        if p.leader >= 0:
            assert view.is_active(p.leader), f"ineligible leader {p.leader}: {p} {self.facts}"
            assert p.leader in p.isr, p
        ineligible = [b for b in p.isr if not view.is_active(b)]
        if ineligible:
            assert p.isr == tuple(ineligible) and len(p.isr) == 1 and p.leader == -1, \
                f"ineligible ISR member(s) {ineligible}: {p} {self.facts}"


class Kip841Machine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        # Topics named "u..." allow unclean elections, so elections outside the ISR are exercised too.
        self.control = ReplicationControl(random.Random(1), unclean_election_enabled=lambda name: name.startswith("u"))
        self.facts: dict[int, BrokerFacts] = {}
        self.log: list = []
        self.next_epoch = 10
        self.follower = Follower()
        for b in (1, 2, 3, 4):
            self._emit([BrokerChange(b, BrokerFacts(epoch=self._epoch()))])
        initial = create_request(creatable("t0", 4, 3), creatable("u0", 2, 2))
        self._emit(self.control.handle_create_topics(initial, self.view(), 0).records)

    # ---- plumbing -------------------------------------------------------------------------------------------

    def _epoch(self) -> int:
        self.next_epoch += 7
        return self.next_epoch

    def view(self) -> StaticEligibility:
        return StaticEligibility(dict(self.facts))

    def _emit(self, entries) -> None:
        for entry in entries:
            self.log.append(entry)
            if isinstance(entry, BrokerChange):
                if entry.facts is None:
                    self.facts.pop(entry.broker_id, None)
                else:
                    self.facts[entry.broker_id] = entry.facts
            else:
                self.control.replay(entry)  # the active controller replays its own writes at once

    def _partitions(self) -> list:
        return [(t, pid) for t in self.control.topics.values() for pid in sorted(t.partitions)]

    # ---- broker lifecycle -----------------------------------------------------------------------------------

    @rule(b=st.sampled_from(BROKER_IDS))
    def register_new_incarnation(self, b):
        removal = self.control.records_for_fence(b, self.view()) if b in self.facts else []
        self._emit([*removal, BrokerChange(b, BrokerFacts(epoch=self._epoch(), fenced=True))])

    @rule(b=st.sampled_from(BROKER_IDS))
    def fence(self, b):
        facts = self.facts.get(b)
        if facts is None or facts.fenced:
            return
        self._emit([*self.control.records_for_fence(b, self.view()), BrokerChange(b, replace(facts, fenced=True))])

    @rule(b=st.sampled_from(BROKER_IDS))
    def unfence(self, b):
        facts = self.facts.get(b)
        if facts is None or not facts.fenced or facts.in_controlled_shutdown:
            return
        self._emit([BrokerChange(b, replace(facts, fenced=False))])
        self._emit(self.control.records_for_unfence(b, self.view()))

    @rule(b=st.sampled_from(BROKER_IDS))
    def controlled_shutdown(self, b):
        facts = self.facts.get(b)
        if facts is None or facts.fenced or facts.in_controlled_shutdown:
            return
        records = self.control.records_for_controlled_shutdown(b, self.view())
        self._emit([*records, BrokerChange(b, replace(facts, in_controlled_shutdown=True))])

    @rule(b=st.sampled_from(BROKER_IDS))
    def unregister(self, b):
        if b in self.facts:
            self._emit([*self.control.records_for_unregister(b, self.view()), BrokerChange(b, None)])

    # ---- requests -------------------------------------------------------------------------------------------

    @rule(data=st.data())
    def alter_partition(self, data):
        partitions = self._partitions()
        if not partitions:
            return
        topic, pid = data.draw(st.sampled_from(partitions))
        p = topic.partitions[pid]
        requester = data.draw(st.sampled_from([p.leader] * 3 + list(BROKER_IDS)))
        leader_epoch = p.leader_epoch + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
        partition_epoch = p.partition_epoch + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
        # Mostly well-formed proposals (so the eligibility check is what decides), sometimes malformed ones.
        isr = data.draw(st.lists(st.sampled_from(p.replicas), unique=True))
        if requester in p.replicas and requester not in isr and data.draw(st.integers(0, 4)) > 0:
            isr = [requester, *isr]
        if data.draw(st.integers(0, 9)) == 0:
            isr = [*isr, data.draw(st.sampled_from([*isr, 9] if isr else [9]))]
        version = data.draw(st.sampled_from([2, 3]))
        recovery = data.draw(st.sampled_from([0, 0, 0, 1]))
        requester_epoch = self.facts[requester].epoch if requester in self.facts else 1
        if version == 3:
            members = [(b, self._member_epoch(data, b)) for b in isr]
            request = alter_v3(requester, topic.topic_id, [(pid, leader_epoch, partition_epoch, members, recovery)],
                               broker_epoch=requester_epoch)
        else:
            request = alter_v2(requester, topic.topic_id, [(pid, leader_epoch, partition_epoch, isr, recovery)],
                               broker_epoch=requester_epoch)
        result = self.control.handle_alter_partition(request, version, self.view())
        answer = result.response.topics[0].partitions[0] if result.response.topics else None
        if answer is not None and answer.error_code == ErrorCode.NONE:
            assert all(self.view().is_active(b) for b in isr), "an ineligible ISR member was accepted"
        self._emit(result.records)

    @rule(data=st.data())
    def leader_adds_every_replica_back(self, data):
        """KIP-841's motivating case: a leader whose metadata lags proposes all replicas, fenced ones included."""
        led = [(t, pid) for t, pid in self._partitions() if t.partitions[pid].leader >= 0]
        if not led:
            return
        topic, pid = data.draw(st.sampled_from(led))
        p = topic.partitions[pid]
        members = [(b, self.facts[b].epoch if b in self.facts else -1) for b in p.replicas]
        request = alter_v3(p.leader, topic.topic_id, [(pid, p.leader_epoch, p.partition_epoch, members)],
                           broker_epoch=self.facts[p.leader].epoch)
        result = self.control.handle_alter_partition(request, 3, self.view())
        answer = result.response.topics[0].partitions[0]
        all_active = all(self.view().is_active(b) for b in p.replicas)
        expected = ErrorCode.NONE if all_active else ErrorCode.INELIGIBLE_REPLICA
        assert answer.error_code in (expected, ErrorCode.NEW_LEADER_ELECTED), answer
        self._emit(result.records)

    def _member_epoch(self, data, b) -> int:
        registered = self.facts[b].epoch if b in self.facts else 3
        return data.draw(st.sampled_from([registered, registered, -1, registered - 1]))

    @rule(count=st.integers(1, 3), rf=st.integers(1, 3), n=st.integers(0, 10**6), unclean=st.booleans())
    def create_topic(self, count, rf, n, unclean):
        request = create_request(creatable(f"{'u' if unclean else 't'}{n}", count, rf))
        self._emit(self.control.handle_create_topics(request, self.view(), 0).records)

    @rule(data=st.data())
    def delete_topic(self, data):
        if self.control.topics:
            tid = data.draw(st.sampled_from(sorted(self.control.topics)))
            request = dt.DeleteTopicsRequest(topics=(dt.DeleteTopicState(name=None, topic_id=tid),),
                                             timeout=i32Timedelta.parse(datetime.timedelta(0)))
            self._emit(self.control.handle_delete_topics(request).records)

    @rule(election_type=st.sampled_from([0, 1]))
    def elect_leaders(self, election_type):
        request = el.ElectLeadersRequest(election_type=i8(election_type), topic_partitions=None)
        self._emit(self.control.handle_elect_leaders(request, self.view()).records)

    @rule(limit=st.integers(1, 3))
    def balance_leaders(self, limit):
        self._emit(self.control.records_for_preferred_balance(self.view(), limit))

    @rule()
    def unclean_recovery(self):
        self._emit(self.control.records_for_unclean_recovery(self.view()))

    # ---- checks ---------------------------------------------------------------------------------------------

    @invariant()
    def replayed_log_respects_kip841_after_every_record(self):
        self.follower.catch_up(self.log)
        assert list(self.follower.control.snapshot_records()) == list(self.control.snapshot_records())

    def teardown(self) -> None:
        # From scratch, once: the same image as the incremental follower.
        fresh = Follower()
        fresh.catch_up(self.log)
        assert list(fresh.control.snapshot_records()) == list(self.control.snapshot_records())


Kip841Machine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
test_kip841_invariants_hold_under_random_broker_lifecycles_and_alter_partition = Kip841Machine.TestCase
