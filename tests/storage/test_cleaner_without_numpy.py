"""A platform where numpy does not import (no wheel for it): the broker's modules still import, the log cleaner
takes the record-by-record path over `PlainOffsetMap` and leaves the segments the numpy path leaves, byte for byte,
pass after pass; a compacted topic's every-record-has-a-key check still refuses a keyless record. Each check runs in
a Python process where `import numpy` fails."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage.compaction_rules import ProducerLast

from .cleaner_helpers import KEY, new_log
from .test_cleaner_fast_path import CONFIG, _clean, _files, _varied_batches, _write

# Run in the child: numpy made unimportable before pykraft is, then one pass over the log at argv[1].
_CHILD = textwrap.dedent("""
    import json, sys, time

    class NoNumpy:  # `import numpy` raises ImportError, as where it has no wheel
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "numpy":
                raise ImportError("numpy is not installed")

    sys.meta_path.insert(0, NoNumpy())
    import pykraft.node.hosts.log_cleaner, pykraft.node.hosts.cleaner_child, pykraft.node.serve  # noqa: F401
    from pykraft.broker.produce_rules import require_keys
    from pykraft.records import SimpleRecord, encode_batch
    from pykraft.storage import open_file_log
    from pykraft.storage.cleaner import Cleaner
    from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings, clean_once
    from pykraft.storage.compaction_rules import ProducerLast
    from pykraft.storage.file_log import LogConfig
    from pykraft.storage.log_manager import read_topic_id
    from pykraft.storage.offset_map import HAVE_NUMPY, PlainOffsetMap, Throttler, new_offset_map

    root, now, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    assert not HAVE_NUMPY and not any(m.split(".")[0] == "numpy" for m in sys.modules)
    keyless = encode_batch([SimpleRecord(b"v", b"k"), SimpleRecord(b"v", None)], base_offset=0,
                           partition_leader_epoch=1, timestamp_ms=1)
    refused = require_keys(keyless, 2, topic, 0)
    config = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512, allow_offset_gaps=True)
    log, _ = open_file_log(root, config, topic=topic, partition=0, topic_id=read_topic_id(f"{root}/{topic}-0"))
    log.update_high_watermark(log.end_offset())
    try:
        omap = new_offset_map(1 << 20)
        assert isinstance(omap, PlainOffsetMap)
        cleaner = Cleaner(omap, 2048, Throttler(float("inf"), time.monotonic_ns()))
        settings = CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=16 * 1024, delete_retention_ms=5000)
        offered = CleanableLog((topic, 0), root, log, settings, {7: ProducerLast(last_data_offset=None, epoch=0)})
        task, end, stats = clean_once(CleanerManager([root]), cleaner, [offered], now)
    finally:
        log.close()
    print(json.dumps({"fast": cleaner.fast, "refused": refused is not None, "end": end,
                      "stats": [stats.bytes_read, stats.bytes_written, stats.messages_read, stats.messages_written,
                                stats.invalid_messages, stats.map_bytes_read, stats.map_messages_read]}))
""")


def _clean_without_numpy(root: str, now: int) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, root, str(now), KEY[0]], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_without_numpy_the_cleaner_leaves_the_segments_of_the_numpy_path(tmp_path) -> None:
    roots = {True: str(tmp_path / "numpy"), False: str(tmp_path / "plain")}
    for root in roots.values():
        new_log(root, CONFIG).close()
    directories = {fast: os.path.join(root, f"{KEY[0]}-{KEY[1]}") for fast, root in roots.items()}
    rng = random.Random(11)
    producers = {7: ProducerLast(last_data_offset=None, epoch=0)}
    for now in (30_000, 35_000, 40_000):  # tombstones' horizons set, then passed
        batches = _varied_batches(rng, 25)
        for root in roots.values():
            _write(root, batches)
        end, stats = _clean(roots[True], True, now, 1 << 20, producers)
        plain = _clean_without_numpy(roots[False], now)
        assert plain["fast"] is False and plain["refused"] is True
        assert (plain["end"], tuple(plain["stats"])) == (end, stats)
        assert _files(directories[True]) == _files(directories[False])


def test_the_plain_map_fills_where_the_numpy_map_does() -> None:
    from pykraft.records import iter_batches
    from pykraft.records.rebuild import record_keys, records_section
    from pykraft.storage.offset_map import OffsetMap, PlainOffsetMap

    maps = [OffsetMap(60 * 24, seed=b"s"), PlainOffsetMap(60 * 24, seed=b"s")]
    rng = random.Random(3)
    for base in range(0, 2000, 20):
        raw = encode_batch([SimpleRecord(b"v", None if rng.random() < 0.1 else b"k%d" % rng.randrange(80))
                            for _ in range(20)], base_offset=base, partition_leader_epoch=1, timestamp_ms=1)
        batch = next(iter_batches(raw, verify_crc=False))
        records = record_keys(records_section(batch), 20)
        full = [m.put_records(base, records, 30) for m in maps]
        assert full[0] == full[1]
        assert (maps[0].size, maps[0].latest_offset) == (maps[1].size, maps[1].latest_offset)
        assert all(maps[0].get(b"k%d" % k) == maps[1].get(b"k%d" % k) for k in range(80))
        if full[0]:
            break
    assert maps[0].full and maps[1].full
