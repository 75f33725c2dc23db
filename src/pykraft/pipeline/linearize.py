"""Client histories (JSON lines, `pykraft-history.jsonl`) checked with the simulator's linearizability checker
(sim/checks/linearizability.py), one (history, key) group at a time so that Spark spreads the groups over its tasks.

A line: {"history": "run-7", "model": "kv"|"log", "client_id": 3, "input": ["put", "k", "v"], "output": null,
"call": 120, "return_time": 180}; `return_time` null = never answered. KV histories are split by key (the
model is P-compositional by key); a log history is checked whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pykraft.sim.checks import linearizability as lin

HISTORY_DDL = ("`history` STRING, `model` STRING, `client_id` BIGINT, `input` STRING, `output` STRING, "
               "`call` BIGINT, `return_time` BIGINT")
VERDICT_DDL = "`history` STRING, `key` STRING, `operations` INT, `outcome` STRING, `detail` STRING"
CHECK_TIMEOUT_S = 10.0  # like the simulator: a search out of time is "unknown", never a violation


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _loads(text: Any) -> Any:
    return None if text is None else _frozen(json.loads(text))


def check_group(history: str, key: str | None, model_name: str, rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    ops = [lin.Operation(int(r["client_id"]), _loads(r["input"]), int(r["call"]),
                         _loads(r["output"]) if r["return_time"] is not None else None,
                         None if r["return_time"] is None else int(r["return_time"])) for r in rows]
    model = lin.LogModel() if model_name == "log" else lin.KVModel()
    result = lin.check_operations(model, ops, timeout_s=CHECK_TIMEOUT_S)
    detail = result.explain() if result.outcome is lin.Outcome.ILLEGAL else None
    return {"history": history, "key": key, "operations": len(ops), "outcome": result.outcome.name, "detail": detail}
