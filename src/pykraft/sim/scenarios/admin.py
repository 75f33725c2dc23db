"""The simulated admin tool: AddVoter, RemoveVoter and whole reassignments driven by the planner
(`raft/reassignment.next_step`), sent over the simulated network to the current leader with retries.

The tool reads the current voter set from the newest leader's memory (an omniscient shortcut for DescribeQuorum)
and only acts when that leader has no voter change in flight, as `kafka-metadata-quorum` would after describing
the quorum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.reassignment import AddVoterStep, Blocked, RemoveVoterStep, ResignLeaderStep, next_step
from pykraft.raft.voter_set import ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.sim.engine.node import CLUSTER_ID
from pykraft.sim.engine.wire import ADMIN, AdminRequest, AdminResponse, Resign, endpoints_of
from pykraft.sim.scenarios.workload import newest_leader

if TYPE_CHECKING:
    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.world import World

ADD_TIMEOUT_MS = 10_000
RETRY_MS = 200
REQUEST_TIMEOUT_MS = 3_000


def voter_node(world: World, node_id: int) -> VoterNode:
    """The node as a voter: its current directory id (after a wipe, the new one)."""
    disk = world.nodes[node_id].disk
    return VoterNode(ReplicaKey(node_id, disk.directory_id), endpoints_of(node_id), SupportedVersionRange(0, 1))


@dataclass
class AdminStats:
    sent: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)


class AdminTool:
    """Drives one reassignment at a time towards `target` (ids); `set_target` replaces it, as the planner's
    stateless contract allows. `ack_when_committed=False` (answer on append) is used for some additions."""

    def __init__(self, world: World, eager: bool = False, ack_on_append: float = 0.3) -> None:
        self.world = world
        self.ack_on_append = ack_on_append  # chance that an AddVoter asks to be answered on append (KIP-1186)
        # Eager: send the next step as soon as the previous one was answered, without waiting for the voter set
        # to commit (an answer on append comes earlier); the leader must then refuse a second uncommitted change.
        self.eager = eager
        self.rng = world.stream("admin")
        self.target: list[int] | None = None
        self.in_flight: int | None = None
        self.next_op = 0
        self.stats = AdminStats()
        self.blocked: str | None = None
        world.endpoints[ADMIN] = self

    def set_target(self, ids: list[int]) -> tuple[int, str, str]:
        self.target = sorted(ids)
        self.blocked = None
        self.world.scheduler.after(0, self.tick)
        return ADMIN, "admin-target", str(self.target)

    def done(self) -> bool:
        """Nothing left to do: no target, or the newest leader's committed voters are the target."""
        if self.target is None or self.blocked is not None:
            return True
        leader = newest_leader(self.world)
        if leader is None or leader.core is None or self.in_flight is not None:
            return False
        return self._step(leader) is None and self._settled(leader)

    def _settled(self, leader: Any) -> bool:
        core = leader.core
        offset = core.history.last_voter_set_offset()
        hwm = core.high_watermark
        return core.reconfig.pending is None and hwm is not None and (offset is None or offset < hwm)

    def _step(self, leader: Any) -> Any:
        assert self.target is not None
        target = VoterSet.of(voter_node(self.world, i) for i in self.target)
        return next_step(leader.core.voters(), target, leader.node_id)

    def tick(self) -> tuple[int, str, str] | None:
        if self.target is None or self.in_flight is not None or self.blocked is not None:
            return None
        leader = newest_leader(self.world)
        if leader is None or not (self.eager or self._settled(leader)):
            self.world.scheduler.after(RETRY_MS, self.tick)
            return None
        step = self._step(leader)
        if step is None and not self._settled(leader):
            # The target is reached only in an uncommitted voter set (eager mode): a new leader may truncate it
            # (swarm seed 2006845: RemoveVoter(4) timed out uncommitted, the next leader still had 4), so look again
            # until it commits, as an operator re-describing the quorum after a timeout would.
            self.world.scheduler.after(RETRY_MS, self.tick)
            return None
        if step is None:
            return ADMIN, "admin-done", str(self.target)
        if isinstance(step, Blocked):
            self.blocked = step.reason
            return ADMIN, "admin-blocked", step.reason
        if isinstance(step, AddVoterStep):
            request: Any = rm.add_voter_request(CLUSTER_ID, step.node.key, step.node.endpoints, ADD_TIMEOUT_MS,
                                                ack_when_committed=self.rng.random() >= self.ack_on_append)
        elif isinstance(step, RemoveVoterStep):
            request = rm.remove_voter_request(CLUSTER_ID, step.key)
        else:
            assert isinstance(step, ResignLeaderStep)
            request = Resign()
        self.next_op += 1
        self.in_flight = self.next_op
        self.stats.sent += 1
        label = type(step).__name__
        self.stats.steps.append(f"{label}({getattr(step, 'key', None) or step.node.key})")
        self.world.send(ADMIN, leader.node_id, AdminRequest(self.next_op, request), label)
        self.world.scheduler.after(REQUEST_TIMEOUT_MS + ADD_TIMEOUT_MS, self.on_timeout, self.next_op)
        return ADMIN, "admin-step", f"{label} -> n{leader.node_id}"

    def on_timeout(self, op_id: int) -> tuple[int, str, str] | None:
        if self.in_flight != op_id:
            return None
        self.in_flight = None
        self._count("timeout")
        self.world.scheduler.after(RETRY_MS, self.tick)
        return ADMIN, "admin-timeout", f"#{op_id}"

    def deliver(self, envelope: Envelope) -> tuple[int, str, str] | None:
        if not self.world.network.admit(envelope):
            return None
        response: AdminResponse = envelope.payload
        if self.in_flight != response.op_id:
            return None
        self.in_flight = None
        error = getattr(response.response, "error_code", ErrorCode.NONE)
        if error == ErrorCode.NONE:
            self.stats.ok += 1
        else:
            self._count(error.name)
        self.world.scheduler.after(1 if self.eager else RETRY_MS, self.tick)
        return ADMIN, "admin-return", getattr(error, "name", str(error))

    def _count(self, what: str) -> None:
        self.stats.errors[what] = self.stats.errors.get(what, 0) + 1
