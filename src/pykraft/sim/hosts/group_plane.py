"""The simulated broker's group coordinator: the pure classic-group coordinator (broker/group_coordinator.py) on the
`__consumer_offsets` partitions the broker leads, over the real partition host, as the node's GroupHost hosts it:

- coordinator = leader of partition `partition_for(group, partitions)`; on becoming leader the partition's log is
  replayed (broker/group_log.py) into groups and committed offsets, at once (the node loads in slices between
  event-loop turns); on losing it the groups go and parked requests are answered NOT_COORDINATOR;
- writes (offsets, a generation's metadata) are appended as leader with acks=all and answered once the high
  watermark passed them (NOT_COORDINATOR when the leadership moved meanwhile, COORDINATOR_NOT_AVAILABLE else);
- the coordinator's deadlines (sessions, join and sync phases) are the broker's timers.
Requests are `GroupRequest` messages (group_wire.py) from the simulated consumers (sim/scenarios/group_workload.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator, JoinRequest, Reply
from pykraft.broker.group_log import OFFSETS_TOPIC, group_record, offset_records, replay_all
from pykraft.broker.group_state import OffsetEntry, StoreGroup
from pykraft.protocol.errors import ErrorCode
from pykraft.records import encode_batch
from pykraft.records.group_records import partition_for
from pykraft.sim.hosts.group_wire import GroupRequest, GroupResponse

if TYPE_CHECKING:
    from pykraft.sim.hosts.brokers import BrokerNode

GROUP_CONFIG = GroupConfig(min_session_timeout_ms=500, initial_rebalance_delay_ms=200)
_WRITE_ERRORS = {ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.NOT_COORDINATOR}


class SimGroups:
    def __init__(self, broker: BrokerNode) -> None:
        self.broker = broker
        self.coordinators: dict[int, GroupCoordinator] = {}
        self._parked: dict[int, Callable[[Any], None]] = {}
        self._tokens = itertools.count()
        self._timer_generation = 0
        self.loads = 0

    @property
    def host(self) -> Any:
        assert self.broker.data is not None
        return self.broker.data.host

    def partition_count(self) -> int | None:
        cache = self.broker.cache
        topic_id = cache.topic_id(OFFSETS_TOPIC)
        info = None if topic_id is None else cache.replication.topics.get(topic_id)
        return None if info is None else len(info.partitions)

    # ---- leadership --------------------------------------------------------------------------------------------
    def sync_leadership(self) -> None:
        led = {index for (topic, index), replica in self.host.replicas.items()
               if topic == OFFSETS_TOPIC and replica.leading is not None}
        for partition in [p for p in self.coordinators if p not in led]:
            self._deliver(self.coordinators.pop(partition).unload())
        now = self.broker.now()
        for partition in sorted(led - set(self.coordinators)):
            coordinator = GroupCoordinator(GROUP_CONFIG, self._member_id)
            for group in replay_all(self.host.replicas[(OFFSETS_TOPIC, partition)].log).values():
                coordinator.load_group(group, now)
            self.coordinators[partition] = coordinator
            self.loads += 1
        self._reschedule()

    def _member_id(self, client_id: str) -> str:
        return f"{client_id}-{self.broker.node_id}-{next(self._tokens)}"

    def close(self) -> None:
        for coordinator in self.coordinators.values():
            self._deliver(coordinator.unload())
        self.coordinators.clear()
        self._timer_generation += 1

    # ---- requests ------------------------------------------------------------------------------------------------
    def handle(self, request: GroupRequest, reply: Callable[[GroupResponse], None]) -> None:
        count = self.partition_count()
        coordinator = None if not count else self.coordinators.get(partition_for(request.group_id, count))
        if coordinator is None:
            reply(GroupResponse(request.request_id, ErrorCode.NOT_COORDINATOR))
            return
        now = self.broker.now()
        answer = getattr(self, f"_{request.op}")(coordinator, request, now, reply)
        if answer is not None:
            reply(GroupResponse(request.request_id, *answer))
        self._reschedule()

    def _park(self, request: GroupRequest, reply: Callable[[GroupResponse], None]) -> int:
        token = next(self._tokens)
        self._parked[token] = lambda answer: reply(GroupResponse(request.request_id, answer.error, answer))
        return token

    def _join(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> None:
        member_id, client_id, protocols = request.args
        join = JoinRequest(request.group_id, member_id, None, client_id, "sim", 1500, 3000, "consumer", protocols,
                           True)
        self.run(coordinator, coordinator.join(join, self._park(request, reply), now))

    def _sync(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> None:
        member_id, generation, assignments = request.args
        self.run(coordinator, coordinator.sync(request.group_id, member_id, generation, dict(assignments),
                                               self._park(request, reply), now))

    def _heartbeat(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> tuple:
        member_id, generation = request.args
        return (coordinator.heartbeat(request.group_id, member_id, generation, now),)

    def _leave(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> tuple:
        (member_id,) = request.args
        errors, replies = coordinator.leave(request.group_id, [(member_id, None)], now)
        self.run(coordinator, replies)
        return (errors[0],)

    def _offsets(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> tuple:
        group = coordinator.groups.get(request.group_id)
        committed = {} if group is None else {tp: e.offset for tp, e in group.offsets.items()}
        return ErrorCode.NONE, committed

    def _commit(self, coordinator: GroupCoordinator, request: GroupRequest, now: int, reply: Any) -> tuple | None:
        member_id, generation, positions = request.args
        error = coordinator.check_commit(request.group_id, member_id, generation, now)
        if error is not ErrorCode.NONE:
            return (error,)
        offsets = {tp: OffsetEntry(offset, -1, "", now) for tp, offset in positions}

        def done(written: ErrorCode) -> None:
            if written is ErrorCode.NONE:
                coordinator.offsets_committed(request.group_id, offsets)
            reply(GroupResponse(request.request_id, written))

        self._write(request.group_id, offset_records(request.group_id, offsets), done)
        return None

    # ---- the coordinator's replies and writes ---------------------------------------------------------------------
    def run(self, coordinator: GroupCoordinator, replies: list[Reply]) -> None:
        for reply in replies:
            if isinstance(reply, StoreGroup):
                self._store(coordinator, reply)
        self._deliver([r for r in replies if not isinstance(r, StoreGroup)])

    def _deliver(self, replies: list[Any]) -> None:
        for reply in replies:
            send = self._parked.pop(reply.token, None)
            if send is not None:
                send(reply)

    def _store(self, coordinator: GroupCoordinator, store: StoreGroup) -> None:
        group = coordinator.groups.get(store.group_id)
        if group is None:
            return
        self._write(store.group_id, [group_record(group)], lambda error: self.run(
            coordinator, coordinator.group_stored(store.group_id, store.generation, error, self.broker.now())))

    def _write(self, group_id: str, records: list[Any], then: Callable[[ErrorCode], None]) -> None:
        count = self.partition_count() or 1
        batch = encode_batch(records, base_offset=0, partition_leader_epoch=0, timestamp_ms=self.broker.now())
        result = self.host.append_as_leader(OFFSETS_TOPIC, partition_for(group_id, count), bytearray(batch), -1)
        if result.error is not ErrorCode.NONE or result.waiter is None:
            then(_WRITE_ERRORS.get(result.error, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        result.waiter.then(lambda error: then(ErrorCode.NONE if error is ErrorCode.NONE
                                              else _WRITE_ERRORS.get(error, ErrorCode.COORDINATOR_NOT_AVAILABLE)))

    # ---- time --------------------------------------------------------------------------------------------------
    def _reschedule(self) -> None:
        self._timer_generation += 1
        deadlines = [d for d in (c.next_deadline() for c in self.coordinators.values()) if d is not None]
        if deadlines:
            self.broker.later(max(1, min(deadlines) - self.broker.now()), self._poll, self._timer_generation)

    def _poll(self, generation: int) -> None:
        if generation != self._timer_generation:
            return
        now = self.broker.now()
        for coordinator in list(self.coordinators.values()):
            self.run(coordinator, coordinator.poll(now))
        self._reschedule()
