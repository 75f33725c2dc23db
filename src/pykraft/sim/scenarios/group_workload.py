"""Consumer groups as a workload: `GroupConsumer`s of one group read the data topic through the brokers' group
coordinators (sim/hosts/group_plane.py), as a classic Kafka consumer does:

find the coordinator (the leader of `partition_for(group)` of `__consumer_offsets`, from a broker's metadata) ->
JoinGroup (MEMBER_ID_REQUIRED first) -> the leader assigns the topic's partitions by range -> SyncGroup -> the
committed offsets of the partitions it has no position for (OffsetFetch; none: the log start) -> Fetch from each partition's leader,
commit its positions every few rounds with its generation, heartbeat; a rebalance, an unknown member, an illegal
generation or no answer in time sends it back to JoinGroup. Acknowledged commits go to the data checker
(`GroupOffsetMonotonic`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.broker.fetch_answers import PartitionFetch
from pykraft.broker.group_log import OFFSETS_TOPIC
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.framing import FileRegion
from pykraft.records import iter_batches
from pykraft.records.group_records import partition_for
from pykraft.sim.hosts.data_wire import FetchRequest, FetchResponse
from pykraft.sim.hosts.group_wire import GroupRequest, GroupResponse
from pykraft.sim.scenarios.data_workload import leader_of

if TYPE_CHECKING:
    from pykraft.sim.engine.world import World

CONSUMER_BASE = 3000
TICK_MS = 40
REQUEST_TIMEOUT_MS = 1000
REJOIN = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID,
                    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.FENCED_INSTANCE_ID})


def range_assignment(members: list[str], partitions: int) -> dict[str, bytes]:
    """Kafka's RangeAssignor for one topic: consecutive partitions, the first members one more."""
    members = sorted(members)
    out: dict[str, bytes] = {}
    per, extra = divmod(partitions, len(members))
    start = 0
    for index, member in enumerate(members):
        count = per + (1 if index < extra else 0)
        out[member] = ",".join(str(p) for p in range(start, start + count)).encode()
        start += count
    return out


class GroupConsumer:
    def __init__(self, world: World, index: int, group: str, topic: str, partitions: int) -> None:
        self.world, self.group, self.topic, self.partitions = world, group, topic, partitions
        self.id = CONSUMER_BASE + index
        self.client_id = f"consumer-{index}"
        self.rng = world.stream(f"consumer-{index}")
        self.member_id = ""
        self.generation = -1
        self.phase = "join"
        self.assigned: list[int] = []
        self.positions: dict[int, int] = {}
        self.in_flight: tuple[int, str, int] | None = None  # (request id, what, deadline)
        self.next_request = 0
        self.rounds = 0
        self.running = False
        self.stats = {"joins": 0, "commits": 0, "consumed": 0, "rejoins": 0}
        self._committing: dict[tuple[str, int], int] = {}  # the positions of the OffsetCommit in flight
        self.positions_generation = -1  # the generation the positions were read in
        world.endpoints[self.id] = self

    def start(self, world: World | None = None) -> Any:
        self.running = True
        self.world.scheduler.after(self.rng.randint(1, TICK_MS), self._tick)
        return self.id, "consumer-start", self.group

    def stop(self, world: World | None = None) -> Any:
        """Leave the group (LeaveGroup) and stop, as a consumer closed cleanly."""
        self.running = False
        if self.member_id:
            self._group_request("leave", (self.member_id,))
        return self.id, "consumer-stop", self.group

    # ---- the loop ----------------------------------------------------------------------------------------------
    def _tick(self) -> Any:
        now = self.world.scheduler.now_ms
        if self.running:
            self.world.scheduler.after(TICK_MS, self._tick)
        if self.in_flight is not None:
            if now < self.in_flight[2]:
                return None
            self.in_flight = None
            self._rejoin()
        if not self.running:
            return None
        self.rounds += 1
        if self.phase == "join":
            self.stats["joins"] += 1
            return self._group_request("join", (self.member_id, self.client_id, (("range", self.topic.encode()),)))
        if self.phase == "sync":  # its SyncGroup could not go out (no coordinator known): start again
            self._rejoin()
            return None
        if self.phase == "offsets":
            return self._group_request("offsets", ())
        if self.rounds % 6 == 0:
            self._committing = {(self.topic, p): o for p, o in sorted(self.positions.items())}
            return self._group_request("commit", (self.member_id, self.generation, tuple(self._committing.items())))
        if self.rounds % 4 == 0:
            return self._group_request("heartbeat", (self.member_id, self.generation))
        return self._fetch()

    def _group_request(self, op: str, args: tuple[Any, ...]) -> Any:
        count = self._offsets_partitions()
        target = None if not count else leader_of(self.world, self.rng, OFFSETS_TOPIC, partition_for(self.group, count))
        if target is None:
            return None
        self.next_request += 1
        self.in_flight = (self.next_request, op, self.world.scheduler.now_ms + REQUEST_TIMEOUT_MS)
        self.world.send(self.id, target, GroupRequest(self.next_request, self.group, op, args), f"Group.{op}")
        return self.id, f"group-{op}", f"-> {target}"

    def _fetch(self) -> Any:
        if not self.assigned:
            return None
        partition = self.assigned[self.rounds % len(self.assigned)]
        leader = leader_of(self.world, self.rng, self.topic, partition)
        if leader is None:
            return None
        self.next_request += 1
        self.in_flight = (self.next_request, f"fetch-{partition}", self.world.scheduler.now_ms + REQUEST_TIMEOUT_MS)
        part = PartitionFetch(partition, self.positions.get(partition, 0), max_bytes=1 << 14)
        self.world.send(self.id, leader, FetchRequest(self.next_request, -1, -1, ((self.topic, part),)), "Fetch")
        return None

    def _offsets_partitions(self) -> int | None:
        for node in self.world.nodes.values():
            cache = getattr(node, "cache", None)
            if cache is None:
                continue
            topic_id = cache.topic_id(OFFSETS_TOPIC)
            if topic_id is not None:
                return len(cache.replication.topics[topic_id].partitions)
        return None

    def _rejoin(self, forget_member: bool = False) -> None:
        """Back to JoinGroup. The positions stay for now: if the group answers with the same generation (a new
        coordinator, no rebalance) the consumer goes on from them; a new generation drops them (another member may
        have owned the partitions meanwhile) and the committed offsets are fetched."""
        self.stats["rejoins"] += 1
        self.phase = "join"
        self.assigned = []
        if forget_member:
            self.member_id = ""

    # ---- answers -----------------------------------------------------------------------------------------------
    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope):
            return None
        answer = envelope.payload
        if self.in_flight is None or getattr(answer, "request_id", None) != self.in_flight[0]:
            return None
        what = self.in_flight[1]
        self.in_flight = None
        if isinstance(answer, FetchResponse):
            return self._fetched(answer)
        if isinstance(answer, GroupResponse):
            return self._answered(what, answer)
        return None

    def _fetched(self, answer: FetchResponse) -> Any:
        for _, part in answer.partitions:
            if part.index not in self.positions:
                continue
            if part.error is ErrorCode.OFFSET_OUT_OF_RANGE and part.log_start_offset >= 0:
                self.positions[part.index] = max(self.positions[part.index], part.log_start_offset)
            elif part.error is ErrorCode.NONE and len(part.records):
                assert not isinstance(part.records, FileRegion), "the simulated log has no files"
                for batch in iter_batches(part.records, verify_crc=True):
                    if batch.last_offset >= self.positions[part.index]:
                        self.stats["consumed"] += batch.last_offset + 1 - max(batch.base_offset,
                                                                              self.positions[part.index])
                        self.positions[part.index] = batch.last_offset + 1
        return None

    def _answered(self, what: str, answer: GroupResponse) -> Any:
        error = answer.error
        if what == "join":
            if error is ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = answer.value.member_id
            elif error is ErrorCode.NONE:
                reply = answer.value
                self.member_id, self.generation = reply.member_id, reply.generation
                members = [m[0] for m in reply.members]
                assignments = range_assignment(members, self.partitions) if reply.leader == self.member_id else {}
                self.phase = "sync"
                self._group_request("sync", (self.member_id, self.generation, tuple(sorted(assignments.items()))))
            elif error is ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return self.id, "joined", f"{error.name} gen {self.generation}"
        if what == "sync":
            if error is ErrorCode.NONE:
                text = answer.value.assignment.decode()
                self.assigned = [int(p) for p in text.split(",") if p]
                if self.positions_generation != self.generation:
                    self.positions = {}
                self.positions = {p: o for p, o in self.positions.items() if p in self.assigned}
                self.positions_generation = self.generation
                self.phase = "consume" if all(p in self.positions for p in self.assigned) else "offsets"
            else:
                self._rejoin(error is ErrorCode.UNKNOWN_MEMBER_ID)
            return self.id, "synced", f"{error.name} {self.assigned}"
        if what == "offsets":
            if error is ErrorCode.NONE:
                committed = answer.value
                for p in self.assigned:
                    self.positions.setdefault(p, committed.get((self.topic, p), 0))
                self.phase = "consume"
            else:
                self._rejoin()
            return None
        if what == "commit" and error is ErrorCode.NONE:
            self.stats["commits"] += 1
            self.world.data_checker.on_group_commit(self.group, self.generation, self._committing)  # type: ignore[attr-defined]
        if error in REJOIN:
            self._rejoin(error is ErrorCode.UNKNOWN_MEMBER_ID)
        return None
