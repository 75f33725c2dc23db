"""The `records`, `snapshots` and `traces` tables an `analyze` run wrote, against a single-process decoding of the
same files (dump-log's code path, `test_sources._plain`) and the trace files' lines."""

from __future__ import annotations

import base64
from pathlib import Path

import pyarrow.parquet as pq

from .test_sources import _plain


def parquet(out: Path, name: str) -> list[dict]:
    return pq.ParquetDataset(out / name).read().to_pylist()


def _expected_content(r: dict) -> tuple:
    """What a single-process decoding says a record holds: a control record, a metadata record's type, or the
    value's bytes (user and group records)."""
    if r["isControl"]:
        return ("control",)
    if "metadata" in r:
        return ("metadata", r["metadata"]["type"])
    return ("value", r["value"])


def _table_content(r: dict) -> tuple:
    if r["is_control"]:
        return ("control",)
    if r["topic"] == "__cluster_metadata" and r["record_type"] is not None:
        return ("metadata", r["record_type"])
    return ("value", None if r["value"] is None else base64.b64encode(r["value"]).decode())


def check_tables(root: Path, out: Path) -> list[dict]:
    """Assert the tables equal the files under `root` (node directories `node-N/data`); returns the records."""
    expected, snapshots = [], 0
    for path in sorted(root.glob("**/node-*/data/*-*/*.log")):
        node = int(path.parts[-4].removeprefix("node-"))
        expected += [(node, f"{path.parent.name}/{path.name}", r["baseOffset"], r["offset"], r["leaderEpoch"],
                      r["timestamp"], r["crcValid"], _expected_content(r)) for r in _plain(path)]
    for path in sorted(root.glob("**/node-*/data/__cluster_metadata-0/*.checkpoint")):
        snapshots += len(_plain(path))
    rows = parquet(out, "records")
    got = [(r["node_id"], r["file"], r["base_offset"], r["offset"], r["leader_epoch"], r["timestamp"],
            r["crc_valid"], _table_content(r)) for r in rows]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert len(parquet(out, "snapshots")) == snapshots
    lines = sum(len(p.read_text().splitlines()) for p in root.glob("**/node-*/data/pykraft-trace.jsonl"))
    assert len(parquet(out, "traces")) == lines
    return rows
