"""Segment roll, index files in Kafka's byte format, group-commit flush tickets."""

from __future__ import annotations

import os
import struct
import threading

from pykraft.records import iter_batches
from pykraft.storage import LogConfig, open_file_log

from .helpers import batch, open_log, partition_dir, segment_files


def test_roll_by_size_names_segments_by_base_offset(tmp_path) -> None:
    log = open_log(tmp_path)
    for _ in range(12):
        log.append_as_leader(batch(log.end_offset(), 1, 2, size=50), 1)
    bases = log.segment_base_offsets()
    assert len(bases) > 2
    names = [os.path.basename(p) for p in segment_files(tmp_path)]
    assert names == [f"{b:020d}.log" for b in bases]
    for path in segment_files(tmp_path)[:-1]:
        assert os.path.getsize(path) <= 400
    log.close()


def test_roll_by_age_uses_record_timestamps(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path), LogConfig(segment_ms=1000))
    log.append_as_leader(batch(0, 1, 1, timestamp_ms=10_000), 1)
    log.append_as_leader(batch(1, 1, 1, timestamp_ms=11_000), 1)  # exactly segment.ms later: no roll
    assert log.segment_base_offsets() == [0]
    log.append_as_leader(batch(2, 1, 1, timestamp_ms=11_001), 1)
    assert log.segment_base_offsets() == [0, 2]
    log.close()


def test_index_files_hold_kafka_entries(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path), LogConfig(index_interval_bytes=200))
    positions = []
    for i in range(10):
        positions.append((log.end_offset(), log.size_in_bytes()))
        log.append_as_leader(batch(log.end_offset(), 1, 2, timestamp_ms=100 + i, size=60), 1)
    log.close()
    index = open(os.path.join(partition_dir(tmp_path), "00000000000000000000.index"), "rb").read()
    entries = [struct.unpack_from(">ii", index, i) for i in range(0, len(index), 8)]
    assert entries, "entries every 200 bytes"
    data = open(segment_files(tmp_path)[0], "rb").read()
    for relative, position in entries:
        found = next(iter_batches(data[position:]))
        assert found.last_offset == relative  # the entry names the last offset of the batch at that position
    times = open(os.path.join(partition_dir(tmp_path), "00000000000000000000.timeindex"), "rb").read()
    stamps = [struct.unpack_from(">qi", times, i) for i in range(0, len(times), 12)]
    assert stamps and all(a[0] < b[0] for a, b in zip(stamps, stamps[1:]))


def test_group_commit_many_appends_one_ticket_synced_in_a_thread(tmp_path) -> None:
    log = open_log(tmp_path)
    for _ in range(20):
        log.append_as_leader(batch(log.end_offset(), 1, 1), 1)
    ticket = log.prepare_flush()
    assert ticket.end_offset == 20 and log.flushed_end_offset() == 0
    # The loop keeps appending while the worker syncs.
    worker = threading.Thread(target=ticket.sync)
    worker.start()
    log.append_as_leader(batch(20, 1, 1), 1)
    worker.join()
    log.complete_flush(ticket)
    assert log.flushed_end_offset() == 20  # the later append is not covered
    log.flush()
    assert log.flushed_end_offset() == 21
    log.close()


def test_truncation_while_a_ticket_is_out_lowers_what_it_reports(tmp_path) -> None:
    log = open_log(tmp_path)
    for _ in range(10):
        log.append_as_leader(batch(log.end_offset(), 1, 1), 1)
    ticket = log.prepare_flush()
    log.truncate_to(4)
    log.append_as_leader(batch(4, 1, 1), 1)
    log.append_as_leader(batch(5, 1, 1), 1)  # offsets 4..5 re-written after the ticket was taken
    ticket.sync()
    log.complete_flush(ticket)
    assert log.flushed_end_offset() == 4
    log.close()


def test_reads_stay_valid_after_truncation(tmp_path) -> None:
    log = open_log(tmp_path)
    for _ in range(10):
        log.append_as_leader(batch(log.end_offset(), 1, 1), 1)
    view = log.read(5, 10**6).records
    before = bytes(view)
    log.truncate_to(2)
    assert bytes(view) == before  # a read's buffer is private: no SIGBUS, no change
    log.close()


def test_reading_a_large_batch_reads_its_bytes_once(tmp_path, preads) -> None:
    """The offset index names the batch ending before a fetch offset (a whole batch early when batches are large):
    the read finds the wanted batch from headers, so a 1 MB follower fetch reads about 1 MB, not 2."""
    log = open_log(tmp_path, LogConfig())
    for _ in range(4):
        log.append_as_follower(batch(log.end_offset(), 1, 1000, size=1000), 1)
    read_sizes = preads
    read_sizes.clear()
    for offset in (1000, 1500, 3000):
        records = log.read(offset, 1 << 20).records
        (found,) = iter_batches(records)
        assert found.base_offset <= offset <= found.last_offset
        assert sum(read_sizes) < len(records) + 64 * 1024 + 32 * 1024  # the batch, headers, up to max_bytes
        read_sizes.clear()
    log.close()
