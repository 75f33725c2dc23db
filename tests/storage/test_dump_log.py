"""`pykraft dump-log` on files the FileLog wrote shows exactly what was written."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from pykraft.cli.dump_log import dump_files
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage.snapshot_content import SnapshotBuilder

from .helpers import open_log, partition_dir, segment_files


def dump_json(paths: list[str]) -> tuple[int, list[dict]]:
    out = io.StringIO()
    code = dump_files([Path(p) for p in paths], True, out=out, err=io.StringIO())
    return code, [json.loads(line) for line in out.getvalue().splitlines()]


def test_dump_log_of_segments_matches_the_appended_records(tmp_path) -> None:
    log = open_log(tmp_path)
    written = []
    for i in range(15):
        values = [f"payload-{i}-{j}".encode() * 3 for j in range(1 + i % 3)]
        epoch = 1 + i // 5
        base = log.end_offset()
        log.append_as_leader(
            encode_batch([SimpleRecord(value=v) for v in values], base_offset=base, partition_leader_epoch=epoch,
                         timestamp_ms=1000 + i),
            epoch,
        )
        written += [(base + j, epoch, 1000 + i, v) for j, v in enumerate(values)]
    log.truncate_to(written[-4][0])  # what the dump shows must be what survives truncation
    kept = [w for w in written if w[0] < log.end_offset()]
    log.close()
    files = segment_files(tmp_path)
    assert len(files) > 1
    code, objects = dump_json(files)
    assert code == 0
    shown = [(o["offset"], o["leaderEpoch"], o["timestamp"], base64.b64decode(o["value"])) for o in objects]
    assert shown == kept
    assert all(o["crcValid"] and not o["isControl"] for o in objects)


def test_dump_log_of_a_snapshot_shows_header_data_and_footer(tmp_path) -> None:
    log = open_log(tmp_path)
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(10, 2))
    assert writer is not None
    builder = SnapshotBuilder(writer, last_contained_log_timestamp=77, now_ms=5, kraft_version=0)
    builder.append([SimpleRecord(value=b"state")])
    builder.freeze()
    log.close()
    path = f"{partition_dir(tmp_path)}/00000000000000000010-0000000002.checkpoint"
    code, objects = dump_json([path])
    assert code == 0
    assert [o["isControl"] for o in objects] == [True, False, True]
    assert base64.b64decode(objects[1]["value"]) == b"state"
    assert all(o["leaderEpoch"] == 2 for o in objects) and [o["offset"] for o in objects] == [0, 1, 2]
    assert "77" in json.dumps(objects[0]["control"])
