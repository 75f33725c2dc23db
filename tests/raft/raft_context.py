"""A small test-context builder for the pure core, in the spirit of Kafka's RaftClientTestContext."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from pykraft.raft.client import RaftCore
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effect_runner import EffectRunner, Outbox, SequencedDurability
from pykraft.raft.effects import (
    CommitBatches, FlushLog, LeaderChanged, LoadSnapshot, PersistElection, Ready, Respond, Send, ShutdownComplete,
)
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records import SimpleRecord, encode_batch

CLUSTER = "test-cluster"


def endpoints(node_id: int) -> Endpoints:
    return Endpoints.of([Endpoint("CONTROLLER", "localhost", 9990 + node_id)])


def voter_set(ids: list[int]) -> VoterSet:
    return VoterSet.of(VoterNode(ReplicaKey(i), endpoints(i), SupportedVersionRange(0, 1)) for i in ids)


class MemoryIO(SequencedDurability):
    """The harness's I/O for the one effect runner (raft/effect_runner.py): every durable write completes at once,
    and a flush's `on_log_flushed` is fed right away (before the rest of the output that emitted it); everything
    is recorded on the context, `effects` in the order the runner handled it."""

    def __init__(self, ctx: Context) -> None:
        outbox = Outbox()
        super().__init__(outbox.on_done)
        self.ctx = ctx
        self.runner = EffectRunner(self, outbox, self)

    # ---- DurabilityLane -------------------------------------------------------------------------------------------

    def persist_election(self, effect: PersistElection) -> int:
        self.ctx.effects.append(effect)
        self.ctx.persisted.append(effect.state)
        return self._completed(self.issue(election=True))

    def flush_log(self, effect: FlushLog) -> int:
        ctx = self.ctx
        ctx.effects.append(effect)
        ctx.log.flush()
        seq = self._completed(self.issue())
        ctx._run(ctx.core.on_log_flushed(ctx.log.flushed_end_offset(), ctx.now))
        return seq

    def _completed(self, seq: int) -> int:
        self.complete({seq})
        return seq

    # ---- EffectSink -------------------------------------------------------------------------------------------------
    def transmit(self, send: Send) -> None:
        self.ctx.effects.append(send)
        self.ctx.sent.append(send)

    def respond(self, respond: Respond) -> None:
        self.ctx.effects.append(respond)
        self.ctx.responses.append(respond)

    def commit(self, effect: CommitBatches) -> None:
        self.ctx.effects.append(effect)

    def load_snapshot(self, effect: LoadSnapshot) -> None:
        self.ctx.effects.append(effect)

    def leader_changed(self, effect: LeaderChanged) -> None:
        self.ctx.effects.append(effect)

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        self.ctx.effects.append(effect)


@dataclass
class Context:
    core: RaftCore
    log: MemoryLog
    now: int = 0
    persisted: list[ElectionState] = field(default_factory=list)
    sent: list[Send] = field(default_factory=list)
    responses: list[Respond] = field(default_factory=list)
    effects: list[Any] = field(default_factory=list)
    io: MemoryIO = field(init=False)

    def __post_init__(self) -> None:
        self.io = MemoryIO(self)

    def _run(self, ready: Ready) -> Ready:
        self.io.runner.run(ready)
        return ready

    def poll(self) -> Ready:
        return self._run(self.core.poll(self.now))

    def advance(self, ms: int) -> Ready:
        self.now += ms
        return self.poll()

    def request(self, request: Any, ref: object = "r") -> Respond:
        self.responses.clear()
        self._run(self.core.handle_request(ref, request, self.now))
        assert self.responses, "no response"
        return self.responses[-1]

    def request_no_response(self, request: Any, ref: object = "r") -> None:
        self.responses.clear()
        self._run(self.core.handle_request(ref, request, self.now))
        assert not self.responses

    def respond(self, send: Send, response: Any) -> Ready:
        return self._run(self.core.handle_response(send.destination.node_id, send.correlation_id, response, self.now))

    def take_sent(self, cls: type | None = None) -> list[Send]:
        out = [s for s in self.sent if cls is None or isinstance(s.request, cls)]
        self.sent = [s for s in self.sent if s not in out]
        return out

    @property
    def role(self) -> str:
        return self.core.quorum.role.value

    @property
    def epoch(self) -> int:
        return self.core.quorum.epoch


def append_batch(log: MemoryLog, epoch: int, count: int = 1) -> None:
    base = log.end_offset()
    records = [SimpleRecord(value=f"r{base + i}".encode()) for i in range(count)]
    log.append_as_follower(encode_batch(records, base_offset=base, partition_leader_epoch=epoch, timestamp_ms=0), epoch)
    log.flush()


def build(local_id: int | None = 0, voters: list[int] = (0, 1, 2), *, stored: ElectionState | None = None,
          log: MemoryLog | None = None, seed: int = 1, config: QuorumConfig | None = None,
          directory_id: uuid.UUID | None = None, bootstrap: tuple[Endpoint, ...] = ()) -> Context:
    log = log or MemoryLog()
    local = LocalReplica(
        node_id=local_id, directory_id=directory_id, endpoints=endpoints(local_id if local_id is not None else 99),
        cluster_id=CLUSTER, static_voters=voter_set(list(voters)), bootstrap_servers=bootstrap)
    core = RaftCore(local, config or QuorumConfig(append_linger_ms=0), log, random.Random(seed))
    ctx = Context(core, log)
    ctx._run(core.initialize(stored, 0))
    return ctx
