"""Scenario infrastructure (the scenarios themselves are in catalog.py): Kafka's RaftEventSimulationTest scenarios (reference §5.2) and the randomized swarm. Each builds a
World from the seed - cluster shape, network, storage knobs, workload, faults - and returns a Plan the runner
executes: a safety phase with faults until `faults_end_ms`, then a liveness phase (network healed, every node
restarted, failed disks replaced) that must converge within `LIVENESS_BOUND_MS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykraft.raft.config import QuorumConfig
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import VoterSet
from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.admin import AdminTool, voter_node
from pykraft.sim.engine.disk import SimDisk, SimLog
from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.node import SimNode
from pykraft.sim.engine.scheduler import NodeClock
from pykraft.sim.engine.wire import HOST, LISTENER, BASE_PORT
from pykraft.sim.scenarios.workload import Client, SequenceAppender
from pykraft.sim.engine.world import Params, World

# Kafka's simulation constants where they matter for timing (election 1000 ms, request timeout and fetch timeout
# a few seconds, fetch max wait 100 ms); a short linger keeps batches small.
CONFIG = QuorumConfig(election_timeout_ms=1000, fetch_timeout_ms=2000, request_timeout_ms=2000,
                      retry_backoff_ms=50, append_linger_ms=5, max_fetch_wait_ms=100)
# The liveness bound after healing: two election rounds with backoff (2 x 2000 + 1000), a fetch timeout and a
# request timeout for stale connections (2000 + 2000), an auto-join or voter change round (6000), and a snapshot
# download. Stated here, asserted by the runner.
LIVENESS_BOUND_MS = 20_000


@dataclass
class Plan:
    name: str
    world: World
    voters: list[int]
    observers: list[int]
    faults_end_ms: int
    clients: list[Client] = field(default_factory=list)
    appender: SequenceAppender | None = None
    admin: AdminTool | None = None
    notes: list[str] = field(default_factory=list)
    # Extra liveness conditions (each returns what still keeps the run from converging) and extra statistics,
    # for scenarios that run more than the raft core (the metadata scenarios).
    gap_checks: list[Callable[[], list[str]]] = field(default_factory=list)
    stat_hooks: list[Callable[[], dict[str, Any]]] = field(default_factory=list)
    # Checks once the run converged (the data plane's: every acknowledged record consumable)
    end_checks: list[Callable[[], None]] = field(default_factory=list)


def bootstrap_log(voters: VoterSet) -> SimLog:
    """What `storage format --initial-controllers` leaves: the bootstrap snapshot with kraft.version 1 and the
    initial voters; the first leader copies them into the log."""
    log = SimLog()
    raw = log.create_new_snapshot_unchecked(BOOTSTRAP_SNAPSHOT_ID)
    assert raw is not None
    SnapshotWriter(raw, last_contained_log_time_ms=0, now_ms=0, kraft_version=1, voters=voters,
                   on_frozen=log.on_snapshot_frozen).freeze()
    return log


def build_cluster(world: World, voters: int, observers: int, *, skew_ms: int = 0, auto_join: bool = False,
                  config: QuorumConfig = CONFIG) -> tuple[list[int], list[int]]:
    """Voters 0..voters-1 formatted with the bootstrap snapshot; observers formatted empty (they find the leader
    through the bootstrap servers, the voters' endpoints)."""
    from pykraft.raft.voter_set import Endpoint  # keep the top import list about the sim

    rng = world.stream("cluster")
    voter_ids = list(range(voters))
    observer_ids = list(range(voters, voters + observers))
    bootstrap = tuple(Endpoint(LISTENER, HOST, BASE_PORT + i) for i in voter_ids)
    disks = {i: SimDisk(world.new_directory_id(), SimLog()) for i in voter_ids + observer_ids}
    for i in voter_ids + observer_ids:
        clock = NodeClock(rng.randint(-skew_ms, skew_ms) if skew_ms else 0)
        node_config = config if i in voter_ids or not auto_join else _with_auto_join(config)
        node = SimNode(world, i, disks[i], node_config, bootstrap, clock)
        world.nodes[i] = node
        world.endpoints[i] = node
    initial = VoterSet.of(voter_node(world, i) for i in voter_ids)
    for i in voter_ids:
        world.nodes[i].disk.log = bootstrap_log(initial)
    for i in voter_ids + observer_ids:
        world.scheduler.at(rng.randint(0, 50), faults.restart, world, i)
    return voter_ids, observer_ids


def _with_auto_join(config: QuorumConfig) -> QuorumConfig:
    from dataclasses import replace

    return replace(config, auto_join=True)


def add_workload(plan: Plan, *, clients: int = 1, interval_ms: int = 20, timeout_ms: int = 2500) -> None:
    world = plan.world
    plan.appender = SequenceAppender(world, interval_ms, plan.faults_end_ms)
    plan.appender.start()
    rng = world.stream("workload")
    for index in range(clients):
        client = Client(world, index, timeout_ms, plan.faults_end_ms, read_ratio=rng.choice([0.1, 0.3, 0.5]))
        client.start()
        plan.clients.append(client)


def new_world(seed: int, trace_size: int | None, params: Params | None = None) -> World:
    return World(seed, params or Params(), trace_size)


ScenarioBuilder = Callable[[int, int | None], Plan]


def scenario(name: str) -> Callable[[ScenarioBuilder], ScenarioBuilder]:
    """Names a scenario builder; registry.py collects the named builders of the scenario modules (importing a
    module registers nothing)."""
    def name_it(builder: ScenarioBuilder) -> ScenarioBuilder:
        builder.scenario_name = name  # type: ignore[attr-defined]
        return builder
    return name_it


def lossy(rng) -> LinkProfile:  # random.Random
    return LinkProfile(drop=rng.choice([0.0, 0.01, 0.05, 0.1]), duplicate=rng.choice([0.0, 0.01, 0.05]),
                       reorder=rng.choice([0.0, 0.02, 0.1]), delay_min_ms=1, delay_max_ms=rng.choice([3, 10, 30]))
