"""Controllers and brokers in the simulator: each metadata scenario over a few seeds, determinism, and
deliberate bugs that the metadata invariants must catch (replayable from the seed)."""

from __future__ import annotations

import pytest

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.replication import ReplicationControl
from pykraft.controller.log_replay import ReplayedAhead
from pykraft.sim.engine.runner import run

PARTITION_CHANGE = 5


@pytest.mark.parametrize(("scenario", "seed"), [
    ("metadata_basic", 0), ("metadata_basic", 1), ("metadata_failover", 0), ("metadata_failover", 1),
    ("metadata_brokers", 0), ("metadata_swarm", 0), ("metadata_swarm", 3),
])
def test_scenario_converges_without_violation(scenario: str, seed: int) -> None:
    result = run(seed, scenario)
    assert result.ok, result.report()
    stats = result.stats
    assert stats["live_after_ms"] is not None
    assert stats["topics_created"] == 2 and stats["partitions"] == 6
    assert stats["image_checks"] > 0 and stats["metadata_errors"] == 0


def test_basic_registers_every_broker_once_and_elects_one_controller() -> None:
    result = run(0, "metadata_basic")
    assert result.ok, result.report()
    assert result.stats["activations"] == 1
    assert result.stats["broker_starts"] == 3
    assert "RegisterBroker=3" in result.stats["written"]


def test_failover_moves_the_active_controller() -> None:
    result = run(0, "metadata_failover")
    assert result.ok, result.report()
    assert result.stats["activations"] >= 2
    assert result.stats["elections"] >= 2


def test_broker_faults_fence_shrink_and_restart_brokers() -> None:
    result = run(2, "metadata_brokers")
    assert result.ok, result.report()
    shrinks, expands = (int(x) for x in result.stats["isr_shrinks/expands"].split("/"))
    assert shrinks > 0 and expands > 0
    assert result.stats["clean_broker_stops"] >= 1  # a controlled shutdown completed
    assert result.stats["broker_starts"] > 4  # restarts are new incarnations


def test_an_outage_of_every_broker_leaves_sole_leaderless_isr_members_and_recovers() -> None:
    result = run(1, "metadata_brokers")
    assert result.ok, result.report()
    assert result.stats["sole_fenced_isr_seen"] > 0  # KIP-841's exception happened, and liveness followed


def test_a_seed_replays_identically() -> None:
    first = run(5, "metadata_swarm", trace_size=None)
    second = run(5, "metadata_swarm", trace_size=None)
    assert first.trace == second.trace
    assert first.events == second.events and len(first.trace) > 100
    assert {k: v for k, v in first.stats.items()} == second.stats


def _first_violation(scenario: str, seeds: range) -> tuple[int, str | None, str | None]:
    for seed in seeds:
        result = run(seed, scenario)
        if not result.ok:
            return seed, result.invariant, result.replay_command()
    return -1, None, None


def test_controller_that_keeps_fenced_brokers_in_the_isr_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug: fencing a broker writes its BrokerRegistrationChange but no PartitionChange (it stays leader and
    in the ISR). KIP-841's invariant must bite within a few seeds of broker faults, and the bug must replay."""
    monkeypatch.setattr(ReplicationControl, "records_for_fence", lambda self, broker_id, brokers: [])
    seed, invariant, replay = _first_violation("metadata_brokers", range(5))
    assert invariant == "FencedNotInIsr"
    assert replay == f"pykraft sim run --seed {seed} --scenario metadata_brokers"
    assert run(seed, "metadata_brokers").invariant == "FencedNotInIsr"  # the same seed fails the same way


def test_a_broker_that_skips_partition_changes_disagrees_with_the_controllers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = MetadataCache.replay

    def lossy_replay(self: MetadataCache, record: object, offset: int) -> None:
        if int(record.__api_key__) != PARTITION_CHANGE:  # type: ignore[attr-defined]
            real(self, record, offset)

    monkeypatch.setattr(MetadataCache, "replay", lossy_replay)
    _, invariant, _ = _first_violation("metadata_brokers", range(3))
    assert invariant == "ImageAgreement"


def test_an_active_controller_that_replays_its_records_twice_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host must skip the committed copies of records it replayed when it wrote them."""
    monkeypatch.setattr(ReplayedAhead, "covers", lambda self, offset: False)
    _, invariant, _ = _first_violation("metadata_brokers", range(3))
    assert invariant == "ActiveControllerImage"
