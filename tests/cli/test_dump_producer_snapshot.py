"""`pykraft dump-log` on a producer snapshot (`<offset>.snapshot`), in the line format of Kafka's DumpLogSegments."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pykraft.broker.producer_snapshot import ProducerSnapshotEntry, encode_producer_snapshot
from pykraft.cli.main import app

runner = CliRunner()


def test_entries_are_printed_as_kafka_prints_them_and_a_corrupt_file_fails(tmp_path: Path) -> None:
    path = tmp_path / f"{120:020d}.snapshot"
    path.write_bytes(encode_producer_snapshot([ProducerSnapshotEntry(7, 0, 9, 114, 4, 556),
                                               ProducerSnapshotEntry(11, 12, -1, -1, 0, 123456, 13, 100)]))
    result = runner.invoke(app, ["dump-log", str(path)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Dumping {path}",
        "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 556 firstSequence: 5 lastSequence: 9 lastOffset: 114 offsetDelta: 4 timestamp: 556",
        "producerId: 11 producerEpoch: 12 coordinatorEpoch: 13 currentTxnFirstOffset: OptionalLong[100] "
        "lastTimestamp: 123456"]
    as_json = runner.invoke(app, ["dump-log", "--json", str(path)])
    first = json.loads(as_json.stdout.splitlines()[0])
    assert (first["producer_id"], first["last_offset"], first["offset_delta"]) == (7, 114, 4)

    path.write_bytes(path.read_bytes()[:-1])
    result = runner.invoke(app, ["dump-log", str(path)])
    assert result.exit_code == 1 and "not a valid producer snapshot" in result.stderr
