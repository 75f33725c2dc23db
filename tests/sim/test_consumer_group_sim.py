"""The KIP-848 group simulation (sim/consumer_groups.py): seeds pass, and the invariants catch a coordinator that
breaks the rules (mutations)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from pykraft.broker import consumer_coordinator, consumer_group
from pykraft.cli.main import app
from pykraft.sim.consumer_groups import run


@pytest.mark.parametrize("seed", range(24))
def test_seeds_keep_every_invariant(seed):
    result = run(seed, steps=300)
    assert result.ok, result.violation
    assert result.commits > 0 and result.rebalances > 1


def test_assigning_a_partition_before_its_owner_revoked_it_is_caught(monkeypatch):
    monkeypatch.setattr(consumer_group.ConsumerGroup, "owner_epoch", lambda self, topic_id, n: -1)
    violations = [run(seed, steps=300).violation for seed in range(6)]
    assert all(violations) and any("at once" in v or "owned by" in v for v in violations), violations


def test_accepting_commits_of_stale_epochs_is_caught(monkeypatch):
    def lenient(self, group_id, member_id, epoch, api_version):
        return consumer_coordinator.ErrorCode.NONE if group_id in self.groups else \
            consumer_coordinator.ErrorCode.GROUP_ID_NOT_FOUND
    monkeypatch.setattr(consumer_coordinator.ConsumerCoordinator, "check_commit", lenient)
    violations = [run(seed, steps=300).violation for seed in range(12)]
    assert any(v and ("commit" in v) for v in violations), violations


def test_a_coordinator_that_forgets_to_persist_a_record_is_caught(monkeypatch):
    original = consumer_coordinator.ConsumerCoordinator._take

    def dropping(self):  # the current-assignment records never reach the log
        return tuple(r for r in original(self) if r[0].type != consumer_coordinator.rec.CURRENT_ASSIGNMENT)
    monkeypatch.setattr(consumer_coordinator.ConsumerCoordinator, "_take", dropping)
    violations = [run(seed, steps=300).violation for seed in range(4)]
    assert all(violations), violations


def test_the_command_reports_seed_counts():
    result = CliRunner().invoke(app, ["sim", "groups", "--seeds", "3", "--steps", "150"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("3/3 seeds passed in ") and " commits" in result.output
