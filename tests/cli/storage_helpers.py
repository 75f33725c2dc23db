"""Shared pieces of the `pykraft storage` tests: config files and independent decoders of what format wrote."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.records import iter_batches
from pykraft.records.control import decode_control_record
from pykraft.records.metadata import decode_metadata_record

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
runner = CliRunner()


def write_config(tmp_path: Path, *, roles: str = "controller", node_id: int = 1, voters: str | None = None,
                 extra: str = "", dirs: tuple[str, ...] = ("logs",), metadata_dir: str | None = None) -> Path:
    lines = [f"process.roles={roles}", f"node.id={node_id}", "controller.listener.names=CONTROLLER"]
    if "broker" in roles and "controller" in roles:
        lines.append("listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093")
    elif "broker" in roles:
        lines.append("listeners=PLAINTEXT://127.0.0.1:9092")
    else:
        lines.append("listeners=CONTROLLER://127.0.0.1:9093")
    if voters is not None:
        lines.append(f"controller.quorum.voters={voters}")
    else:
        lines.append("controller.quorum.bootstrap.servers=127.0.0.1:9093")
    lines.append("log.dirs=" + ",".join(str(tmp_path / d) for d in dirs))
    if metadata_dir is not None:
        lines.append(f"metadata.log.dir={tmp_path / metadata_dir}")
    path = tmp_path / "server.properties"
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def storage(*args: str):
    return runner.invoke(app, ["storage", *args])


def decode_file(path: Path) -> list[tuple[bool, object]]:
    """(is_control, message) for every record of a snapshot-format file, in order."""
    out = []
    for batch in iter_batches(path.read_bytes()):
        for record in batch.records():
            if batch.is_control:
                out.append((True, decode_control_record(record).message))
            else:
                out.append((False, decode_metadata_record(bytes(record.value))))
    return out
