"""A deterministic simulation of KIP-848 consumer groups over the pure coordinator (broker/consumer_coordinator.py).

Seeded members join, heartbeat, consume and commit, leave, crash and come back (dynamic and static), lose answers,
revoke slowly, and the coordinator fails over (a new one is rebuilt from every record written so far, as a broker
loading `__consumer_offsets` does); topics grow. Each member behaves as Kafka's consumer does: it gives up what its
answer no longer lists before it takes anything new, commits what it read before it revokes, drops everything and
rejoins when fenced. After every event the invariants are checked:

- **single owner**: no partition is processed by two live members at once (nor owned twice in the coordinator);
- **monotonic commits**: a partition's committed offset never goes back, and an accepted commit is made by its
  owner at the owner's current member epoch;
- **liveness**: once the faults stop and the members heartbeat, every subscribed partition is assigned to a live
  member and the group is Stable;
- **persistence**: the state rebuilt from the records equals the live state.

`run(seed)` returns a `GroupSimResult`; a failure names the seed (replay: `pykraft sim groups --seed N`).
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass, field

from pykraft.broker.consumer_coordinator import ConsumerCoordinator, ConsumerGroupConfig, HeartbeatRequest, TopicImage
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec

GROUP = "sim"
CONFIG = ConsumerGroupConfig(session_timeout_ms=3000, heartbeat_interval_ms=300)
REBALANCE_TIMEOUT_MS = 2000
TOPIC_IDS = {"a": uuid.UUID(int=0xA), "b": uuid.UUID(int=0xB), "c": uuid.UUID(int=0xC)}
Partition = tuple[uuid.UUID, int]


class InvariantViolation(AssertionError):
    pass


@dataclass
class Client:
    """One consumer's side of the protocol."""

    name: str
    instance_id: str | None
    subscription: tuple[str, ...] | None
    regex: str | None
    member_id: str = ""
    epoch: int = 0
    owned: set[Partition] = field(default_factory=set)
    target: set[Partition] | None = None  # the last answer's assignment, not yet fully taken
    positions: dict[Partition, int] = field(default_factory=dict)
    alive: bool = True
    next_heartbeat_ms: int = 0
    revoke_delay_until_ms: int = 0  # a slow member: holds partitions it must give up until then
    resend_all: bool = False  # its last answer was lost


@dataclass
class GroupSimResult:
    seed: int
    events: int
    violation: str | None
    commits: int
    rebalances: int
    failovers: int

    @property
    def ok(self) -> bool:
        return self.violation is None


class GroupSim:
    def __init__(self, seed: int, steps: int) -> None:
        self.rng = random.Random(seed)
        self.seed, self.steps, self.now = seed, steps, 0
        self.topics = {"a": 6, "b": 3}
        self.records: list[tuple[rec.ConsumerGroupKey, object]] = []
        self.coordinator = self._new_coordinator()
        self.clients: list[Client] = []
        self.committed: dict[Partition, int] = {}
        self.commits = self.failovers = 0
        self.next_id = 0

    def _new_coordinator(self) -> ConsumerCoordinator:
        return ConsumerCoordinator(CONFIG, self._member_id)

    def _member_id(self) -> str:
        self.next_id += 1
        return f"m{self.next_id}"

    def image(self) -> TopicImage:
        return TopicImage({n: (TOPIC_IDS[n], c) for n, c in self.topics.items()}, version=len(self.topics) * 100
                          + sum(self.topics.values()))

    # ---- the coordinator's side ---------------------------------------------------------------------------------
    def write(self, records) -> None:
        for key, value in records:  # through the codec, as they would go to the log
            self.records.append((rec.decode_key(rec.encode_key(key)),
                                 None if value is None else rec.decode_value(key.type, rec.encode_value(value))))

    def failover(self) -> None:
        """A new coordinator loads the group from the records (the old one's timers and memory are gone)."""
        fresh = self._new_coordinator()
        for key, value in self.records:
            fresh.replay(key, value)  # type: ignore[arg-type]
        fresh.loaded(self.now)
        fresh.metadata_changed(self.image())
        self.coordinator, self.failovers = fresh, self.failovers + 1

    # ---- a member's side ------------------------------------------------------------------------------------------
    def heartbeat(self, client: Client, lose_answer: bool = False) -> None:
        # A join, or the first heartbeat after a lost answer: a full request (Kafka's client resends every field
        # after an error or a timeout, and the coordinator answers it with the whole assignment).
        joining = client.epoch == 0 or client.resend_all
        client.resend_all = lose_answer
        owned = {t: frozenset(n for tt, n in client.owned if tt == t) for t in {t for t, _ in client.owned}}
        request = HeartbeatRequest(
            GROUP, client.member_id, client.epoch, instance_id=client.instance_id,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS if joining else -1,
            subscribed_topic_names=client.subscription if joining else None,
            subscribed_topic_regex=client.regex if joining else None, owned=owned, version=1)
        result = self.coordinator.heartbeat(request, self.image(), self.now)
        self.write(result.records)
        client.next_heartbeat_ms = self.now + CONFIG.heartbeat_interval_ms
        if lose_answer:
            return
        if result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.owned.clear()  # fenced: give everything up, rejoin
            client.positions.clear()
            client.epoch, client.target = 0, None
            if result.error is ErrorCode.UNKNOWN_MEMBER_ID and client.instance_id is None:
                client.member_id = f"{client.name}-{self.rng.randrange(10**6)}"
            return
        if result.error is not ErrorCode.NONE:
            return
        client.member_id, client.epoch = result.member_id or client.member_id, result.member_epoch
        if result.assignment is not None:
            client.target = {(t, n) for t, numbers in result.assignment.items() for n in numbers}
        self.reconcile(client)

    def reconcile(self, client: Client) -> None:
        """Revoke (after committing) what the target no longer has; only then take the new partitions."""
        if client.target is None:
            return
        revoked = client.owned - client.target
        if revoked:
            if self.now < client.revoke_delay_until_ms:
                return
            self.commit(client)
            client.owned -= revoked
            for p in revoked:
                client.positions.pop(p, None)
        for p in client.target - client.owned:
            client.owned.add(p)
            client.positions[p] = self.committed.get(p, 0)
        client.target = None if client.owned == client.target else client.target

    def consume_and_commit(self, client: Client) -> None:
        for p in client.owned:
            client.positions[p] = client.positions.get(p, 0) + self.rng.randrange(1, 5)
        if self.rng.random() < 0.5:
            self.commit(client)

    def commit(self, client: Client) -> None:
        if not client.owned or GROUP not in self.coordinator.groups:
            return
        error = self.coordinator.check_commit(GROUP, client.member_id, client.epoch, 9)
        if error is not ErrorCode.NONE:
            return
        member = self.coordinator.groups[GROUP].members.get(client.member_id)
        if member is None or member.member_epoch != client.epoch:
            raise InvariantViolation(f"a commit of {client.member_id} at epoch {client.epoch} was accepted, but the "
                                     f"member is {'gone' if member is None else f'at epoch {member.member_epoch}'}")
        for p in client.owned:
            if self.coordinator.groups[GROUP].partition_owners.get(p) != client.member_id:
                raise InvariantViolation(f"{client.member_id} committed {p} at epoch {client.epoch} without owning it")
            offset = client.positions.get(p, 0)
            if offset < self.committed.get(p, 0):
                raise InvariantViolation(f"commit of {p} went back: {self.committed[p]} -> {offset} by "
                                         f"{client.member_id} at epoch {member.member_epoch}")
            self.committed[p] = offset
        self.commits += 1

    # ---- the run --------------------------------------------------------------------------------------------------
    def run(self) -> GroupSimResult:
        events, violation = 0, None
        try:
            for events in range(1, self.steps + 1):
                self.now += self.rng.randrange(20, 150)
                self.fault()
                self.tick(lose=self.rng.random() < 0.05)
                self.check_safety()
            self.quiet()
            self.check_liveness()
            self.check_persistence()
        except InvariantViolation as exc:
            violation = f"seed {self.seed}, event {events} at {self.now} ms: {exc}"
        rebalances = self.coordinator.groups[GROUP].group_epoch if GROUP in self.coordinator.groups else 0
        return GroupSimResult(self.seed, events, violation, self.commits, rebalances, self.failovers)

    def live(self) -> list[Client]:
        return [c for c in self.clients if c.alive]

    def fault(self) -> None:
        roll, live = self.rng.random(), self.live()
        if roll < 0.06 and len(live) < 6:
            self.join()
        elif roll < 0.09 and live:
            self.leave(self.rng.choice(live))
        elif roll < 0.11 and live:
            self.rng.choice(live).alive = False  # crash: no leave, its session expires
        elif roll < 0.13:
            dead = [c for c in self.clients if not c.alive and c.instance_id is not None]
            if dead:  # a static member restarts under its instance id
                client = self.rng.choice(dead)
                client.alive, client.epoch, client.owned, client.target = True, 0, set(), None
                client.member_id = f"{client.name}-{self.rng.randrange(10**6)}"
        elif roll < 0.15 and live:
            self.rng.choice(live).revoke_delay_until_ms = self.now + self.rng.randrange(0, 4000)
        elif roll < 0.16:
            self.failover()
        elif roll < 0.17:
            name = self.rng.choice(["b", "c"])
            self.topics[name] = self.topics.get(name, 1) + (1 if name in self.topics else 0)
            self.coordinator.metadata_changed(self.image())

    def join(self) -> None:
        name = f"c{len(self.clients)}"
        static = self.rng.random() < 0.3
        names, regex = self.rng.choice([(("a", "b"), None), (("a",), None), (("b",), None), (None, "[abc]"),
                                        (None, "a|c")])
        self.clients.append(Client(name, f"i-{name}" if static else None, names, regex,
                                   member_id=f"{name}-{self.rng.randrange(10**6)}", next_heartbeat_ms=self.now))

    def leave(self, client: Client) -> None:
        if client.epoch > 0:
            self.commit(client)
            epoch = -2 if client.instance_id is not None and self.rng.random() < 0.5 else -1
            result = self.coordinator.heartbeat(HeartbeatRequest(GROUP, client.member_id, epoch,
                                                                 instance_id=client.instance_id, version=1),
                                                self.image(), self.now)
            self.write(result.records)
        client.alive, client.owned, client.target = False, set(), None

    def tick(self, lose: bool = False) -> None:
        for client in self.live():
            if self.now >= client.next_heartbeat_ms:
                self.heartbeat(client, lose_answer=lose and self.rng.random() < 0.3)
            else:
                self.reconcile(client)
            self.consume_and_commit(client)
        self.write(self.coordinator.poll(self.now))

    def quiet(self) -> None:
        """No more faults: the live members heartbeat for a while (every slow revocation finishes)."""
        for client in self.live():
            client.revoke_delay_until_ms = 0
        end = self.now + 30_000
        while self.now < end:
            self.now += 100
            self.tick()
            self.check_safety()

    # ---- invariants -------------------------------------------------------------------------------------------------
    def check_safety(self) -> None:
        group = self.coordinator.groups.get(GROUP)
        members = group.members if group is not None else {}
        seen: dict[Partition, str] = {}
        # A member the coordinator fenced (session or rebalance timeout) still processes until its next heartbeat
        # tells it: a zombie, which Kafka too cannot stop; its commits are refused (checked in `commit`).
        for client in (c for c in self.live() if c.member_id in members):
            for p in client.owned:
                if p in seen:
                    raise InvariantViolation(f"{p} processed by {seen[p]} and {client.member_id} at once")
                seen[p] = client.member_id
        owners: dict[Partition, str] = {}
        for member in (group.members.values() if group else ()):
            for parts in (member.assigned, member.pending_revocation):
                for topic_id, numbers in parts.items():
                    for n in numbers:
                        if (topic_id, n) in owners:
                            raise InvariantViolation(f"{(topic_id, n)} owned by {owners[(topic_id, n)]} and "
                                                     f"{member.member_id} in the coordinator")
                        owners[(topic_id, n)] = member.member_id

    def check_liveness(self) -> None:
        live = self.live()
        group = self.coordinator.groups.get(GROUP)
        if not live or group is None:
            return
        wanted: set[Partition] = set()
        for client in live:
            names = client.subscription or tuple(n for n in self.topics if re.fullmatch(client.regex or "", n))
            wanted |= {(TOPIC_IDS[n], i) for n in names if n in self.topics for i in range(self.topics[n])}
        owned = set().union(*(c.owned for c in live))
        if owned != wanted:
            raise InvariantViolation(f"after the quiet period {len(wanted - owned)} subscribed partitions have no "
                                     f"owner: {sorted(wanted - owned)[:5]}")
        if group.state().value != "Stable":
            raise InvariantViolation(f"after the quiet period the group is {group.state().value}")

    def check_persistence(self) -> None:
        rebuilt = self._new_coordinator()
        for key, value in self.records:
            rebuilt.replay(key, value)  # type: ignore[arg-type]
        mine, theirs = self.coordinator.groups.get(GROUP), rebuilt.groups.get(GROUP)
        if (mine is None) != (theirs is None) or mine is not None and theirs is not None and (
                mine.members != theirs.members or mine.target != theirs.target
                or (mine.group_epoch, mine.assignment_epoch) != (theirs.group_epoch, theirs.assignment_epoch)):
            raise InvariantViolation("the group rebuilt from its records differs from the live one")


def run(seed: int, steps: int = 600) -> GroupSimResult:
    return GroupSim(seed, steps).run()
