"""The transactional workload of the data-plane scenarios (sim/hosts/txn_workload.py, `data_transactions`):
it passes with commits, aborts and a fenced zombie, and each of its invariants catches a planted bug."""

from __future__ import annotations

from typing import Any

import pytest

import pykraft.broker.producer_state as producer_state
import pykraft.sim.hosts.partition_logs as partition_logs
from pykraft.records.txn_markers import is_txn_marker_batch
from pykraft.sim.engine.runner import run

from .planted import caught, passing_run
from pykraft.sim.scenarios.registry import SCENARIOS
from pykraft.sim.hosts.txn_workload import TXN_TOPIC


def test_the_transactions_scenario_passes_with_commits_aborts_and_a_fenced_zombie() -> None:
    assert "data_transactions" in SCENARIOS
    result = passing_run("data_transactions", lambda r: r.stats["txn"]["fenced_writes_refused"] > 0)
    txn = result.stats["txn"]
    assert txn["commits"] > 0 and txn["aborts"] > 0 and txn["failovers"] > 0
    assert txn["read"] > 0 and txn["read"] % 2 == 0  # committed transactions write 2 records per partition
    assert "alpha#0" in result.stats["txn_producers"] and "fenced" in result.stats["txn_producers"]
    assert txn["fenced_writes_refused"] > 0  # the zombie's writes after the fence were refused


def test_the_brokers_logs_hold_the_markers_and_the_replicas_agree_on_them() -> None:
    markers: dict[int, list[tuple[int, int]]] = {}

    def finished(plan: Any) -> None:
        for node in plan.world.nodes.values():
            for key, log in getattr(node, "partition_logs", {}).items():
                if key[0] == TXN_TOPIC:
                    found = [(b.base_offset, b.producer_id) for b in log.batches() if is_txn_marker_batch(b)
                             and b.last_offset < log.high_watermark()]
                    markers.setdefault(key[1], []).append(found)  # type: ignore[arg-type]
    assert run(2, "data_transactions", finished=finished).ok
    for per_replica in markers.values():
        assert per_replica[0] and all(r[:len(per_replica[0])] == per_replica[0][:len(r)] for r in per_replica)


def test_a_fetch_without_the_aborted_transactions_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition_logs.DerivedTxnIndex, "collect", lambda self, start, end: [])
    caught("data_transactions", "TxnReadCommittedClean", "abort")


def test_a_last_stable_offset_at_the_high_watermark_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_state.ProducerStates, "last_stable_offset", lambda self, hwm: hwm)
    caught("data_transactions", "TxnReadCommittedClean", "open")  # a record of a transaction still open


def test_a_committed_transaction_read_as_aborted_in_one_partition_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = partition_logs.DerivedTxnIndex.all_entries

    def commits_aborted_in_partition_1(self: Any) -> list[Any]:
        if self.log.key != (TXN_TOPIC, 1):
            return real(self)
        firsts: dict[int, int] = {}
        found = []
        for batch in self.log.batches():
            if batch.producer_id >= 0 and not is_txn_marker_batch(batch):
                firsts.setdefault(batch.producer_id, batch.base_offset)
            elif batch.producer_id >= 0:
                found.append(partition_logs.AbortedRange(batch.producer_id, firsts.pop(batch.producer_id,
                                                                                       batch.base_offset),
                                                         batch.base_offset))
        return found

    monkeypatch.setattr(partition_logs.DerivedTxnIndex, "all_entries", commits_aborted_in_partition_1)
    caught("data_transactions", "TxnAtomicCommit", "partition 1")


def test_a_write_of_a_fenced_epoch_accepted_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = producer_state.ProducerStates.check

    def stale_epoch_accepted(self: Any, producer_id: int, epoch: int, *args: Any, **kwargs: Any) -> Any:
        known = self._producers.get(producer_id)
        if known is not None and epoch < known.epoch:
            return producer_state.SequenceCheck()
        return real(self, producer_id, epoch, *args, **kwargs)

    monkeypatch.setattr(producer_state.ProducerStates, "check", stale_epoch_accepted)
    caught("data_transactions", "TxnFencedNeverCommits")


@pytest.mark.parametrize("seed", [19, 31])
def test_found_by_the_sweep_a_zombie_between_transactions_writes_nothing(seed: int) -> None:
    """The first sweep's TxnFencedNeverCommits was the harness's: fenced between transactions, the zombie wrote
    with its old epoch though its next AddPartitionsToTxn is refused (Kafka's client writes nothing unadded); the
    brokers, having no marker of the new epoch yet, took it into an open transaction the successor then committed."""
    result = run(seed, "data_transactions")
    assert result.ok, result.report()
