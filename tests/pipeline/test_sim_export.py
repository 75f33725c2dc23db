"""`pykraft sim run --export`: a simulated run's nodes in a real node's layout, readable by the data sources."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pykraft.pipeline.layout import find_files, history_files, trace_files
from pykraft.pipeline.linearize import check_group
from pykraft.sim.engine.export import run_and_export
from pykraft.storage.meta_properties import read_meta_properties

from .test_sources import _plain


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim-export")
    result = run_and_export(0, "swarm_short", str(out))
    return out, result


def test_every_node_written_in_a_nodes_layout(exported):
    out, result = exported
    root = out / "sim-swarm_short-0"
    nodes = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert nodes and all(n.startswith("node-") for n in nodes)
    for node in nodes:
        meta = read_meta_properties(str(root / node / "data"))
        assert meta.cluster_id == "sim-swarm_short-0" and f"node-{meta.node_id}" == node
    segments = find_files([str(root)], snapshots=False)
    assert {f.node.node_id for f in segments} == {int(n.split("-")[1]) for n in nodes}
    decoded = sum(len(_plain(Path(f.path))) for f in segments)
    assert decoded > 0
    assert len(trace_files([str(root)])) == len(nodes)
    hwm = [json.loads(line)["hwm"] for t in trace_files([str(root)]) for line in open(t)
           if '"hwm_advanced"' in line]
    assert hwm and max(hwm) == result.stats["hwm"]


def test_exported_history_is_what_the_simulator_checked(exported):
    out, result = exported
    (path,) = history_files([str(out)])
    rows = [json.loads(line) for line in open(path)]
    assert len(rows) == result.stats["client_ops"] > 0
    verdict = check_group(rows[0]["history"], None, "log", rows)
    assert verdict["outcome"] == "OK"
    assert os.path.basename(os.path.dirname(path)) == "sim-swarm_short-0"


def test_export_replays_from_the_seed(exported, tmp_path):
    out, _ = exported
    run_and_export(0, "swarm_short", str(tmp_path))
    for a in sorted((out / "sim-swarm_short-0").rglob("*.log")):
        b = tmp_path / a.relative_to(out)
        assert a.read_bytes() == b.read_bytes()
