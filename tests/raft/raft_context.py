"""A small test-context builder for the pure core, in the spirit of Kafka's RaftClientTestContext."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from pykraft.raft.client import RaftCore
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effects import FlushLog, PersistElection, Ready, Respond, Send
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records import SimpleRecord, encode_batch

CLUSTER = "test-cluster"


def endpoints(node_id: int) -> Endpoints:
    return Endpoints.of([Endpoint("CONTROLLER", "localhost", 9990 + node_id)])


def voter_set(ids: list[int]) -> VoterSet:
    return VoterSet.of(VoterNode(ReplicaKey(i), endpoints(i), SupportedVersionRange(0, 1)) for i in ids)


@dataclass
class Context:
    core: RaftCore
    log: MemoryLog
    now: int = 0
    persisted: list[ElectionState] = field(default_factory=list)
    sent: list[Send] = field(default_factory=list)
    responses: list[Respond] = field(default_factory=list)
    effects: list[Any] = field(default_factory=list)

    def _run(self, ready: Ready) -> Ready:
        for effect in ready.effects:
            self.effects.append(effect)
            if isinstance(effect, PersistElection):
                self.persisted.append(effect.state)
            elif isinstance(effect, FlushLog):
                self.log.flush()
                self._run(self.core.on_log_flushed(self.log.flushed_end_offset(), self.now))
            elif isinstance(effect, Send):
                self.sent.append(effect)
            elif isinstance(effect, Respond):
                self.responses.append(effect)
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
