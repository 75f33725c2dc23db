"""World: everything one simulated run shares - the scheduler, the network, the nodes and clients, the checker,
the run's parameters and its random streams."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pykraft.sim.checks.invariants import Checker
from pykraft.sim.engine.network import Envelope, LinkProfile, Network
from pykraft.sim.engine.scheduler import Scheduler, stream


@dataclass(frozen=True, slots=True)
class Params:
    """Storage and state-machine knobs of a run (network knobs live in the network's link profiles)."""

    flush_latency_max_ms: int = 3
    torn_write_probability: float = 0.0
    snapshot_every: int = 50  # take a snapshot after this many committed offsets (0: never)
    clean_probability: float = 0.5  # chance that a new snapshot also deletes the log before it


class World:
    def __init__(self, seed: int, params: Params, trace_size: int | None) -> None:
        self.seed = seed
        self.params = params
        self.scheduler = Scheduler(trace_size)
        self.network = Network(self.stream("network"), self._schedule_delivery, LinkProfile())
        self.nodes: dict[int, Any] = {}  # node id -> SimNode
        self.endpoints: dict[int, Any] = {}  # every network endpoint (nodes, clients, admin) -> has .deliver
        self.checker = Checker(self.nodes)
        self._ids = self.stream("directory-ids")

    def stream(self, purpose: str):  # random.Random
        return stream(self.seed, purpose)

    def new_directory_id(self) -> uuid.UUID:
        return uuid.UUID(int=self._ids.getrandbits(128), version=4)

    def send(self, src: int, dst: int, payload: Any, label: str, dst_incarnation: int | None = None) -> None:
        endpoint = self.endpoints.get(dst)
        if endpoint is None:
            return
        self.network.send(src, dst, payload, label, endpoint.deliver, dst_incarnation)

    def _schedule_delivery(self, delay_ms: int, deliver: Any, envelope: Envelope) -> None:
        self.scheduler.after(delay_ms, deliver, envelope)
