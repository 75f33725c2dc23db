"""`pykraft dump-log` of a segment the log cleaner rewrote: the offset gaps listed as Kafka's DumpLogSegments lists
them (stderr, last, most recent first; exit 0), tombstone batches with their delete horizon."""

from __future__ import annotations

import io
from pathlib import Path

from pykraft.cli.dump_log import Decoding, dump_files
from pykraft.storage.cleaner_manager import CleanerManager, CompactionSettings

from tests.storage.cleaner_helpers import new_log, put, records, run_pass


def test_a_cleaned_segments_gaps_are_listed_like_kafkas_tool(tmp_path) -> None:
    log = new_log(str(tmp_path))
    put(log, "u", "only")
    for round_ in range(3):
        for key in ("a", "b", "c"):
            put(log, key, None if (round_, key) == (2, "b") else f"{key}{round_}", 1000 + round_)
    log.roll()
    log.update_high_watermark(log.end_offset())
    run_pass(CleanerManager([str(tmp_path)]), log, 10_000,
             settings=CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=1 << 20, delete_retention_ms=500))
    assert [row[0] for row in records(log)] == [0, 7, 8, 9]
    segment = Path(log.directory) / f"{0:020d}.log"
    log.close()

    out, err = io.StringIO(), io.StringIO()
    assert dump_files([segment], False, out, err, Decoding(deep=True)) == 0  # --deep-iteration: records too
    text = out.getvalue()
    assert "baseOffset: 0 lastOffset: 0 count: 1" in text and "baseOffset: 9 lastOffset: 9 count: 1" in text
    assert "baseOffset: 8 lastOffset: 8 count: 1" in text and "deleteHorizonMs: OptionalLong[10500]" in text
    assert "| offset: 8 CreateTime: 1002 keySize: 1 valueSize: -1" in text  # the tombstone keeps its time
    assert err.getvalue() == f"Non-consecutive offsets in {segment.absolute()}\n  0 is followed by 7\n"
