"""A careless admin: fires AddVoter and RemoveVoter requests at the current leader every few milliseconds
without waiting for the previous answer (the `voter_change_storm` scenario).

Unlike `AdminTool`, which waits for each change to commit (or, eager, for its answer), this one keeps several
requests in flight. A correct leader refuses all but one (a change already pending, or the last VotersRecord
still at or above the high watermark); a leader missing either guard appends a second VotersRecord while the
first is uncommitted, which AtMostOneUncommittedVoterSet reports. AddVoter answered on append (KIP-1186,
AckWhenCommitted=false) and short AddVoter timeouts matter here: both end the pending change while its
VotersRecord may still be uncommitted, so only the "uncommitted VotersRecord" guard stands in the way.

Each request names a real change against the leader's current (possibly uncommitted) voter set: add a node that
is not a voter, or remove a voter while more than one is left. One initial voter (the anchor) is never removed:
the initial voters are every node's bootstrap servers, and a voter set without any of them strands a removed
voter that has forgotten the leader (it can only ask the bootstrap servers, which know nothing either; seed 134
ended so when the rule was "not the last bootstrap server in the leader's view", which two removals in flight
at once defeat). That is an operator's configuration mistake, Kafka's as much as ours, and not what this
scenario is about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.sim.scenarios.admin import voter_node
from pykraft.sim.engine.node import CLUSTER_ID
from pykraft.sim.engine.wire import ADMIN, AdminRequest, AdminResponse
from pykraft.sim.scenarios.workload import newest_leader

if TYPE_CHECKING:
    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.world import World

ADD_TIMEOUTS_MS = (500, 2000, 10_000)  # short ones expire while the record may still be uncommitted


@dataclass
class StormCounts:
    adds: int = 0
    removes: int = 0
    answers: dict[str, int] = field(default_factory=dict)


class VoterChangeStorm:
    def __init__(self, world: World, pool: list[int], bootstrap: list[int], *, until_ms: int, gap_ms: int,
                 ack_on_append: float) -> None:
        self.world = world
        self.pool = sorted(pool)
        self.anchor = min(bootstrap)
        self.until_ms = until_ms
        self.gap_ms = gap_ms
        self.ack_on_append = ack_on_append
        self.rng = world.stream("storm-admin")
        self.next_op = 0
        self.counts = StormCounts()
        world.endpoints[ADMIN] = self

    def start(self, world: World) -> tuple[int, str, str]:
        world.scheduler.after(0, self.tick)
        return ADMIN, "storm-start", f"pool {self.pool}, gap {self.gap_ms} ms"

    def tick(self) -> tuple[int, str, str] | None:
        scheduler = self.world.scheduler
        if scheduler.now_ms >= self.until_ms:
            return ADMIN, "storm-end", ""
        scheduler.after(self.rng.randint(1, 2 * self.gap_ms), self.tick)  # the next one, whatever this one does
        leader = newest_leader(self.world)
        if leader is None or leader.core is None:
            return None
        voters = leader.core.voters()
        addable = [n for n in self.pool if n not in voters.ids()]
        removable = self._removable(voters)
        if addable and (not removable or self.rng.random() < 0.5):
            node = voter_node(self.world, self.rng.choice(addable))
            request: Any = rm.add_voter_request(CLUSTER_ID, node.key, node.endpoints,
                                                self.rng.choice(ADD_TIMEOUTS_MS),
                                                ack_when_committed=self.rng.random() >= self.ack_on_append)
            label, what = "AddVoter", node.key.id
            self.counts.adds += 1
        elif removable:
            key = self.rng.choice(removable)
            request = rm.remove_voter_request(CLUSTER_ID, key)
            label, what = "RemoveVoter", key.id
            self.counts.removes += 1
        else:
            return None
        self.send(leader.node_id, request, label)
        return ADMIN, "storm-request", f"{label}({what}) -> n{leader.node_id}"

    def send(self, node_id: int, request: Any, label: str) -> None:
        """One request to `node_id`, answer counted in the stats (also used on its own by `self_removal_cut`)."""
        self.next_op += 1
        self.world.send(ADMIN, node_id, AdminRequest(self.next_op, request), label)

    def _removable(self, voters: Any) -> list[Any]:
        if len(voters) <= 1:
            return []
        return [k for k in sorted(voters.keys(), key=lambda k: k.id) if k.id != self.anchor]

    def deliver(self, envelope: Envelope) -> tuple[int, str, str] | None:
        if not self.world.network.admit(envelope):
            return None
        response: AdminResponse = envelope.payload
        error = getattr(response.response, "error_code", ErrorCode.NONE)
        name = ErrorCode.of(error).name.lower()  # the core answers with our enum, a decoded answer with kio's
        self.counts.answers[name] = self.counts.answers.get(name, 0) + 1
        return ADMIN, "storm-answer", f"#{response.op_id} {name}"

    def stats(self) -> dict[str, Any]:
        answers = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.answers.items()))
        return {"storm": f"{self.counts.adds} adds, {self.counts.removes} removes; answers: {answers or 'none'}"}
