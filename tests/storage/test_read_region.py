"""A consumer's read as a region of a segment file (`FileLog.read_region`, sent from the file's pages): the region's bytes are
exactly the whole batches `read` returns, cut below the upper offset and at `max_bytes` (one batch at least), from
one segment; batches still in the tail cache come from memory; the region outlives the log's own descriptor."""

from __future__ import annotations

from pykraft.protocol.framing import FileRegion
from pykraft.records import iter_batches
from pykraft.storage import LogConfig

from .helpers import batch, open_log

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=100)


def _fill(log, batches: int, count: int = 5, size: int = 100) -> list[bytes]:
    written = []
    for _ in range(batches):
        data = batch(log.end_offset(), 1, count, size=size)
        log.append_as_leader(data, 1)  # not kept: every read goes to the file
        written.append(data)
    return written


def _bases(records) -> list[int]:
    data = records.read() if isinstance(records, FileRegion) else records
    return [b.base_offset for b in iter_batches(data)]


def test_a_region_holds_the_whole_batches_a_read_returns_below_the_upper_offset(tmp_path) -> None:
    log = open_log(tmp_path, CONFIG)
    written = _fill(log, 12)  # 5 records each, ~650 bytes: several segments of 4000 bytes
    for offset in (0, 3, 5, 17, 31):
        for max_bytes in (1, 1500, 1 << 20):
            for upper in (offset + 1, offset + 12, log.end_offset()):
                region = log.read_region(offset, max_bytes, upper)
                if offset // 5 * 5 + 4 >= upper:  # the batch holding the offset is not all below upper
                    assert region == b""
                    continue
                assert isinstance(region, FileRegion)
                got = region.read()
                bases = _bases(got)
                assert bases[0] <= offset < bases[0] + 5  # from the batch holding the offset
                assert all(base + 4 < upper for base in bases[1:])  # later batches only when they end below upper
                assert len(got) <= max(max_bytes, len(written[0]))  # max_bytes, but at least one batch
                reference = bytes(log.read(offset, max_bytes).records)
                assert reference.startswith(got)  # the same bytes as a read, from one segment
                region.close()
    log.close()


def test_nothing_when_the_first_batch_reaches_the_upper_offset_or_the_offset_is_at_the_end(tmp_path) -> None:
    log = open_log(tmp_path, CONFIG)
    _fill(log, 3)
    assert log.read_region(5, 1 << 20, 9) == b""  # the batch 5-9 ends at the high watermark: not yet visible
    assert log.read_region(15, 1 << 20, 15) == b""
    log.close()


def test_the_tail_cache_serves_from_memory_and_the_caller_trims(tmp_path) -> None:
    log = open_log(tmp_path, LogConfig())
    data = batch(0, 1, 5, size=10) + batch(5, 1, 5, size=10)
    log.append_as_leader(bytearray(data), 1, keep=True)
    got = log.read_region(0, 1 << 20, 5)
    assert not isinstance(got, FileRegion) and bytes(got) == data  # both batches: the broker trims at 5
    log.close()


def test_a_region_outlives_the_log_that_made_it(tmp_path) -> None:
    log = open_log(tmp_path, CONFIG)
    written = _fill(log, 2)
    region = log.read_region(0, 1 << 20, log.end_offset())
    log.close()  # the segment's own descriptor is closed (retention, a cleaner swap): the region's duplicate is not
    assert region.read() == b"".join(written)
    region.close()
    assert region.fd == -1
