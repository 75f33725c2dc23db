"""The transaction harness (sim/hosts/txn_world.py): seeded runs of the real coordinator and producer state with
lost answers, coordinator failovers and a zombie producer, checked by sim/checks/txn_invariants.py."""

from __future__ import annotations

import pytest

from pykraft.sim.checks.txn_invariants import WrittenRecord, atomicity_violations, visible_violations
from pykraft.sim.hosts.txn_world import TxnWorld, check


@pytest.mark.parametrize("seed", range(40))
def test_transaction_invariants_hold(seed):
    assert check(seed) == []


def test_runs_are_deterministic_and_exercise_the_interesting_paths():
    outcomes: dict[str, int] = {}
    fenced = failovers = 0
    for seed in range(40):
        first, second = TxnWorld(seed), TxnWorld(seed)
        first.run()
        second.run()
        assert first.visible() == second.visible() and first.outcome_of == second.outcome_of
        for outcome in first.outcome_of.values():
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
        fenced += any(r.fenced_when_written for r in first.records.values())
        failovers += first.coordinator.epoch > 0
    assert outcomes.get("commit", 0) > 0 and outcomes.get("abort", 0) > 0, outcomes
    assert fenced > 0 and failovers > 0  # zombie writes and coordinator failovers happened in some seeds


def test_the_checks_catch_violations():
    records = {"r1": WrittenRecord("r1", 0, ("t", 1, 0, 1), False)}
    assert visible_violations({0: ["r1"]}, {"r1": "abort"}, records)
    assert visible_violations({0: ["r1"]}, {}, records)  # an open transaction's record
    assert atomicity_violations({0: []}, {"r1": "commit"}, records)


def test_a_broken_last_stable_offset_is_caught(monkeypatch):
    """With the LSO at the high watermark (open transactions readable), the invariants fail on some seeds."""
    from pykraft.broker.producer_state import ProducerStates

    monkeypatch.setattr(ProducerStates, "last_stable_offset", lambda self, hwm: hwm)
    assert any(check(seed) for seed in range(40))


def test_an_unfenced_zombie_is_caught(monkeypatch):
    """Without KIP-890 verification and with the partition's epoch check gone, a zombie's late writes are appended
    after the abort marker and commit with its successor's next transaction: the invariants catch it."""
    from pykraft.broker import producer_state
    from pykraft.broker.txn_coordinator import TxnCoordinator
    from pykraft.protocol.errors import ErrorCode

    monkeypatch.setattr(TxnCoordinator, "verify_partitions",
                        lambda self, txn, pid, epoch, parts: {tp: ErrorCode.NONE for tp in parts})

    original = producer_state.ProducerStates.check

    def lax(self, producer_id, epoch, first_seq, last_seq, transactional=False):
        known = self._producers.get(producer_id)
        if known is not None and epoch < known.epoch:
            return producer_state.SequenceCheck()
        return original(self, producer_id, epoch, first_seq, last_seq, transactional)

    monkeypatch.setattr(producer_state.ProducerStates, "check", lax)
    assert any(check(seed) for seed in range(200))


@pytest.mark.sim_sweep
def test_transaction_invariants_sweep():
    failing = [seed for seed in range(2000) if check(seed)]
    assert failing == [], f"replay with check(seed) for seed in {failing[:10]}"
