"""The cleaner's fast path against its record-by-record path on logs with transactions (the txn merge's rules:
cleaner_txns.py): committed and aborted transactions of several producers interleaved with plain batches, COMMIT
and ABORT markers with their .txnindex entries, markers that wait for their delete horizon and then go, producers
whose last marker stays (emptied) and one the producer state forgot. Cleaned both ways pass after pass, the logs,
indexes, .txnindex files, stats and checkpoint are the same byte for byte; an aborted transaction's records never
survive a pass."""

from __future__ import annotations

import os
import random

from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.records import Compression, iter_batches
from pykraft.records.txn_markers import encode_txn_marker_batch
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.txn_index import AbortedTxn

from .cleaner_helpers import KEY, new_log, reopen
from .test_cleaner_fast_path import CONFIG, _append, _builder_batch, _clean

PRODUCERS = (11, 12, 13)
REMEMBERED = {11: ProducerLast(last_data_offset=None, epoch=0), 12: ProducerLast(last_data_offset=None, epoch=0)}


def _txn_batch(rng: random.Random, producer: int, sequence: int, count: int, tag: bytes) -> bytes:
    """A transactional batch of `producer` (every codec), its values tagged so that a test can find them."""
    builder = DefaultRecordBatchBuilder(2, rng.choice(list(Compression)), 1, producer, 0, sequence, 1 << 22)
    stamp = 10_000 + rng.randrange(1000)
    for i in range(count):
        value = None if rng.random() < 0.1 else tag + rng.randbytes(rng.randrange(0, 40))
        builder.append(i, stamp + i, b"k%d" % rng.randrange(40), value, [])
    return bytes(builder.build())


def _ops(rng: random.Random, steps: int, sequences: dict[int, int], stamp: int) -> list[tuple]:
    """One round of appends: ("data", raw), ("txn", producer, raw, aborts), ("end", producer, raw, abort),
    ("roll",). Every transaction opened in the round ends in it (the cleaner never reaches an open one here)."""
    ops: list[tuple] = []
    open_txns: dict[int, bool] = {}  # producer -> whether its transaction will abort
    for _ in range(steps):
        producer, shape = rng.choice(PRODUCERS), rng.randrange(10)
        if shape < 3:
            ops.append(("data", _builder_batch(rng, rng.choice(list(Compression)), rng.randrange(1, 20), 40)))
        elif shape < 7:
            aborts = open_txns.setdefault(producer, rng.random() < 0.5)
            count = rng.randrange(1, 15)
            raw = _txn_batch(rng, producer, sequences[producer], count, b"ABORTED" if aborts else b"committed")
            sequences[producer] += count
            ops.append(("txn", producer, raw))
        elif shape < 9 and producer in open_txns:
            ops.append(_end(producer, open_txns.pop(producer), stamp))
        else:
            ops.append(("roll",))
    ops.extend(_end(producer, aborts, stamp) for producer, aborts in open_txns.items())
    return ops


def _end(producer: int, abort: bool, stamp: int) -> tuple:
    return ("end", producer, encode_txn_marker_batch(producer, 0, 0, not abort, timestamp_ms=stamp), abort)


def _write(root: str, ops: list[tuple]) -> None:
    """Append a round as a leader would: an ABORT marker's transaction goes into its segment's .txnindex."""
    log, _ = reopen(root, CONFIG)
    first: dict[int, int] = {}
    for op in ops:
        if op[0] == "roll":
            log.roll()
            continue
        offset = log.end_offset()
        _append(log, op[-2] if op[0] == "end" else op[-1])
        if op[0] == "txn":
            first.setdefault(op[1], offset)
        elif op[0] == "end":
            start = first.pop(op[1])
            if op[3]:
                stable = min(first.values(), default=offset + 1)
                log.txn_index.append(log.active_segment_base(), AbortedTxn(op[1], start, offset, stable))
    log.roll()
    log.close()


def _files(directory: str) -> dict[str, bytes]:
    return {name: open(os.path.join(directory, name), "rb").read() for name in sorted(os.listdir(directory))
            if name.endswith((".log", ".index", ".timeindex", ".txnindex"))}


def test_the_fast_path_cleans_transactions_as_the_record_by_record_path(tmp_path, monkeypatch) -> None:
    from pykraft.storage import cleaner

    scans: list[bool] = []
    real_scan = cleaner.scan_chunk

    def counted(*args, **kwargs):
        found = real_scan(*args, **kwargs)
        scans.append(found is not None)
        return found

    monkeypatch.setattr(cleaner, "scan_chunk", counted)
    roots = {fast: str(tmp_path / ("fast" if fast else "slow")) for fast in (True, False)}
    for root in roots.values():
        new_log(root, CONFIG).close()
    directories = {fast: os.path.join(root, f"{KEY[0]}-{KEY[1]}") for fast, root in roots.items()}
    rng = random.Random(27)
    sequences = dict.fromkeys(PRODUCERS, 0)
    markers_seen = 0
    for round_, now in enumerate((30_000, 30_000, 34_999, 35_000, 40_000, 46_000)):  # horizons set, then passed
        ops = _ops(rng, 40, sequences, 20_000 + round_)
        markers_seen += sum(op[0] == "end" for op in ops)
        results = {}
        for fast, root in roots.items():
            _write(root, ops)
            results[fast] = _clean(root, fast, now, 1 << 20, REMEMBERED)
        assert results[True] is not None and results[True] == results[False]
        assert _files(directories[True]) == _files(directories[False])
    assert sum(scans) > len(scans) / 2  # most chunks went the fast way (control batches alone go record by record)
    checkpoints = [open(os.path.join(root, CLEANER_CHECKPOINT)).read() for root in roots.values()]
    assert checkpoints[0] == checkpoints[1]
    logs = b"".join(data for name, data in _files(directories[True]).items() if name.endswith(".log"))
    cleaned = list(iter_batches(logs, verify_crc=False))
    values = [bytes(r.value) for b in cleaned if not b.is_control for r in b.records() if r.value is not None]
    assert not any(v.startswith(b"ABORTED") for v in values)  # every pass's range ended its aborted transactions
    assert any(v.startswith(b"committed") for v in values)
    markers_left = sum(1 for b in cleaned if b.is_control and b.record_count)
    assert 0 < markers_left < markers_seen  # some waited for their horizon, and went after it
