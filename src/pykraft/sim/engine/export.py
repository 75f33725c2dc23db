"""`pykraft sim run|sweep --export DIR`: each simulated node's metadata log, latest snapshot and a trace, and the
clients' history, written in a real node's layout so that `pykraft analyze DIR` audits simulated runs:

    DIR/sim-<scenario>-<seed>/node-<id>/data/{meta.properties, pykraft-trace.jsonl,
                                              __cluster_metadata-0/<start offset>.log, <offset>-<epoch>.checkpoint}
    DIR/sim-<scenario>-<seed>/pykraft-history.jsonl   (model "log": the clients' appends and reads)

The cluster id is `sim-<scenario>-<seed>`. The trace holds what analyze uses: the epochs each node led and its
last high watermark. Only the simulated disk's bytes are written, as they are (a flipped bit stays flipped).
"""

from __future__ import annotations

import json
import os
from typing import Any

from pykraft.storage.meta_properties import MetaProperties

PARTITION = "__cluster_metadata-0"


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def export_run(plan: Any, scenario: str, seed: int, out_dir: str) -> str:
    """Write one finished run; returns its folder."""
    cluster_id = f"sim-{scenario}-{seed}"
    root = os.path.join(out_dir, cluster_id)
    world = plan.world
    leaders = sorted(world.checker.elections)
    for node_id, node in sorted(world.nodes.items()):
        data = os.path.join(root, f"node-{node_id}", "data")
        os.makedirs(os.path.join(data, PARTITION), exist_ok=True)
        meta = MetaProperties(cluster_id, node_id, node.disk.directory_id)
        with open(os.path.join(data, "meta.properties"), "w", encoding="utf-8") as f:
            f.write(meta.to_text())
        _write_log(node.disk.log, os.path.join(data, PARTITION))
        _write_trace(node, node_id, leaders, world.scheduler.now_ms, os.path.join(data, "pykraft-trace.jsonl"))
    _write_history(plan.clients, os.path.join(root, "pykraft-history.jsonl"))
    return root


def _write_log(log: Any, directory: str) -> None:
    start = log.start_offset()
    data = bytes(log.read(start, 2**62).records) if log.end_offset() > start else b""
    with open(os.path.join(directory, f"{start:020d}.log"), "wb") as f:
        f.write(data)
    snapshot_id = log.latest_snapshot_id()
    reader = None if snapshot_id is None else log.read_snapshot(snapshot_id)
    if reader is not None:
        name = f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}.checkpoint"
        with open(os.path.join(directory, name), "wb") as f:
            f.write(bytes(reader.records()))


def _write_trace(node: Any, node_id: int, leaders: list[tuple[int, int]], now_ms: int, path: str) -> None:
    lines = [{"ts_ms": 0, "node_id": node_id, "event": "became_leader", "role": "leader", "epoch": epoch,
              "leader_id": node_id} for epoch, leader in leaders if leader == node_id]
    core = getattr(node, "core", None)
    if core is not None and core.high_watermark is not None:
        lines.append({"ts_ms": now_ms, "node_id": node_id, "event": "hwm_advanced", "hwm": core.high_watermark})
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(line) + "\n" for line in lines)


def _write_history(clients: list[Any], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for client in clients:
            for op in client.history:
                f.write(json.dumps({"history": os.path.basename(os.path.dirname(path)), "model": "log",
                                    "client_id": op.client_id, "input": json.dumps(_jsonable(op.input)),
                                    "output": None if op.return_time is None else json.dumps(_jsonable(op.output)),
                                    "call": op.call, "return_time": op.return_time}) + "\n")



def run_and_export(seed: int, scenario: str, out_dir: str, *, max_events: int = 400_000,
                   trace_size: int | None = 60) -> Any:
    """`runner.run` with the finished world written out (a run replays from its seed, so exporting a sweep's
    seeds afterwards gives the very runs the sweep checked)."""
    from pykraft.sim.engine.runner import run  # the runner loads every scenario module (registry.py)

    return run(seed, scenario, max_events=max_events, trace_size=trace_size,
               finished=lambda plan: export_run(plan, scenario, seed, out_dir))


def _export_task(task: tuple[int, str, str]) -> int:
    seed, scenario, out_dir = task
    run_and_export(seed, scenario, out_dir, trace_size=None)
    return seed


def export_seeds(seeds: range, scenario: str, out_dir: str, jobs: int = 1) -> None:
    tasks = [(seed, scenario, out_dir) for seed in seeds]
    if jobs <= 1:
        for task in tasks:
            _export_task(task)
        return
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        for _ in pool.imap_unordered(_export_task, tasks, chunksize=1):
            pass
