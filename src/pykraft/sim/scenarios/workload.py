"""The workload: the leader appends sequence numbers; clients write and read through the leader with timeouts
and retries; an admin tool runs voter changes (AddVoter, RemoveVoter, planner-driven reassignments).

Clients record a history for the linearizability checker. An attempt answered NOT_LEADER or FAILED certainly did
not take effect and is left out; an attempt that timed out or came back UNKNOWN has an unknown outcome
(return_time None); every attempt writes a fresh value, so a retry never duplicates a write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykraft.sim.engine.wire import CLIENT_BASE, ClientRequest, ClientResponse, OpKind, OpStatus

if TYPE_CHECKING:
    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.node import SimNode
    from pykraft.sim.engine.world import World


def newest_leader(world: World) -> SimNode | None:
    """The live leader with the highest epoch that can take appends (the workload's omniscient view)."""
    best = None
    for node in world.nodes.values():
        core = node.core
        if node.status.value == "up" and core is not None and core.leader_state() is not None \
                and core.shutdown_deadline_ms is None and (best is None or core.quorum.epoch > best.core.quorum.epoch):
            best = node
    return best


class SequenceAppender:
    """Kafka's simulation workload: whoever leads appends the next sequence number every few milliseconds."""

    def __init__(self, world: World, interval_ms: int, until_ms: int) -> None:
        self.world = world
        self.interval_ms = interval_ms
        self.until_ms = until_ms
        self.next_value = 0
        self.rng = world.stream("appender")
        self.appended = 0

    def start(self) -> None:
        self.world.scheduler.after(self.interval_ms, self.tick)

    def tick(self) -> tuple[int | None, str, str] | None:
        world = self.world
        if world.scheduler.now_ms < self.until_ms:
            world.scheduler.after(self.rng.randint(1, 2 * self.interval_ms), self.tick)
        leader = newest_leader(world)
        if leader is None:
            return None
        value = f"s:{self.next_value}".encode()
        offset = leader.writes.append_sequence(value)
        if offset is None:
            return None
        self.next_value += 1
        self.appended += 1
        return leader.node_id, "append", f"{value.decode()} at {offset}"


@dataclass
class Operation:
    """One client attempt as the linearizability checker sees it."""

    client_id: int
    input: tuple[Any, ...]
    call: int
    output: Any = None
    return_time: int | None = None


@dataclass
class ClientStats:
    ok: int = 0
    unknown: int = 0
    refused: int = 0
    timeouts: int = 0


@dataclass
class Client:
    world: World
    index: int
    timeout_ms: int
    until_ms: int
    read_ratio: float
    history: list[Operation] = field(default_factory=list)
    stats: ClientStats = field(default_factory=ClientStats)
    current: tuple[int, Operation, int] | None = None  # (op id, operation, target node)
    next_op: int = 0
    leader_hint: int | None = None

    def __post_init__(self) -> None:
        self.id = CLIENT_BASE + self.index
        self.rng = self.world.stream(f"client-{self.index}")
        self.world.endpoints[self.id] = self

    def start(self) -> None:
        self.world.scheduler.after(self.rng.randint(1, 50), self.issue)

    def idle(self) -> bool:
        return self.current is None

    def issue(self) -> tuple[int, str, str] | None:
        now = self.world.scheduler.now_ms
        if self.current is not None or now >= self.until_ms:
            return None
        self.next_op += 1
        op_id = self.next_op
        nodes = sorted(self.world.nodes)
        target = self.leader_hint if self.leader_hint in self.world.nodes else self.rng.choice(nodes)
        op_input: tuple[str] | tuple[str, bytes]
        if self.rng.random() < self.read_ratio:
            kind, value, op_input = OpKind.READ, f"r:{self.index}:{op_id}".encode(), ("read",)
        else:
            kind, value = OpKind.WRITE, f"w:{self.index}:{op_id}".encode()
            op_input = ("append", value)
        operation = Operation(self.id, op_input, now)
        self.current = (op_id, operation, target)
        self.world.send(self.id, target, ClientRequest(op_id, kind, value), f"client-{kind.value}")
        self.world.scheduler.after(self.timeout_ms, self.on_timeout, op_id)
        return self.id, "client-call", f"{op_input[0]} #{op_id} -> n{target}"

    def on_timeout(self, op_id: int) -> tuple[int, str, str] | None:
        if self.current is None or self.current[0] != op_id:
            return None
        self.history.append(self.current[1])  # unknown outcome: return_time stays None
        self.stats.timeouts += 1
        self.current = None
        self.leader_hint = None
        self._retry(50)
        return self.id, "client-timeout", f"#{op_id}"

    def deliver(self, envelope: Envelope) -> tuple[int, str, str] | None:
        if not self.world.network.admit(envelope):
            return None
        response: ClientResponse = envelope.payload
        if self.current is None or self.current[0] != response.op_id:
            return None
        _, operation, target = self.current
        self.current = None
        now = self.world.scheduler.now_ms
        if response.status is OpStatus.OK:
            operation.return_time = now
            operation.output = response.offset if operation.input[0] == "append" else response.values
            self.history.append(operation)
            self.stats.ok += 1
            self.leader_hint = target
            self._retry(self.rng.randint(1, 30))
        elif response.status is OpStatus.UNKNOWN:
            self.history.append(operation)
            self.stats.unknown += 1
            self.leader_hint = None
            self._retry(20)
        else:  # NOT_LEADER or FAILED: it did not happen
            self.stats.refused += 1
            self.leader_hint = response.leader_hint
            self._retry(20)
        return self.id, "client-return", f"#{response.op_id} {response.status.value}"

    def _retry(self, delay_ms: int) -> None:
        self.world.scheduler.after(delay_ms, self.issue)
