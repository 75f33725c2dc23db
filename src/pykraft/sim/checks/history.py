"""Client histories to the linearizability checker (`linearizability.py`, LogModel): every run's clients form one
history over the replicated log as clients see it (their own writes only, positions counted among them)."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from pykraft.sim.scenarios.workload import Client

CHECK_TIMEOUT_S = 10.0  # a search that runs out of time is reported as unknown, never as a violation


def check_clients(linearizability: ModuleType, clients: Sequence[Client]) -> tuple[str | None, str]:
    """Returns (problem, outcome name): problem is None unless the history is not linearizable."""
    ops = [linearizability.Operation(op.client_id, op.input, op.call,
                                     op.output if op.return_time is not None else None, op.return_time)
           for client in clients for op in client.history]
    if not ops:
        return None, "empty"
    result = linearizability.check_operations(linearizability.LogModel(), ops, timeout_s=CHECK_TIMEOUT_S)
    if result.outcome is linearizability.Outcome.ILLEGAL:
        return result.explain(), result.outcome.name
    return None, result.outcome.name
