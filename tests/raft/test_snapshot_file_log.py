"""The snapshot paths of the core over the file-backed log of pykraft.storage (not only the in-memory log):
a leader creates and serves a snapshot, a follower downloads and installs it, and both survive a reopen."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest

from pykraft.raft import messages
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, encode_batch
from pykraft.storage.log_open import open_file_log

from raft_context import build, voter_set
from scenario_helpers import become_leader, request_partition
from snapshot_helpers import (advance_hwm_to_leo, answer_fetch_with_snapshot, fs_answer, fs_part, fs_request, loads,
                              snapshot_bytes)


def test_leader_over_file_log_creates_serves_and_reopens_a_snapshot(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path))
    ctx = build(0, [0, 1], log=log)
    become_leader(ctx)
    _, ready = ctx.core.append([b"a", b"b", b"c"], ctx.now)
    ctx._run(ready)
    advance_hwm_to_leo(ctx)
    snapshot_id = OffsetAndEpoch(ctx.log.end_offset(), ctx.epoch)
    writer = ctx.core.create_snapshot(snapshot_id, 0, ctx.now)
    writer.append([b"state"])
    writer.freeze()
    data = bytes(log.read_snapshot(snapshot_id).records())
    p = fs_part(ctx.request(fs_request(ctx.epoch, snapshot_id)))
    assert p.error_code == ErrorCode.none and bytes(p.unaligned_records) == data
    log.close()
    reopened, _ = open_file_log(str(tmp_path))
    assert reopened.latest_snapshot_id() == snapshot_id
    assert bytes(reopened.read_snapshot(snapshot_id).records()) == data
    reopened.close()


def test_follower_over_file_log_installs_a_downloaded_snapshot_and_restarts_from_it(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path))
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(2, 1), log=log)
    ctx.poll()
    snapshot_id = OffsetAndEpoch(100, 1)
    data = snapshot_bytes(snapshot_id, [b"s"], kraft=1, voters=voter_set([0, 1, 5]))
    ctx.respond(answer_fetch_with_snapshot(ctx, snapshot_id), fs_answer(snapshot_id, data, 0))
    assert log.start_offset() == log.end_offset() == ctx.core.high_watermark == 100
    assert loads(ctx) == [snapshot_id] and set(ctx.core.voters().ids()) == {0, 1, 5}
    assert request_partition(ctx.take_sent(FetchRequest)[-1]).fetch_offset == 100
    log.close()
    reopened, _ = open_file_log(str(tmp_path))
    assert (reopened.start_offset(), reopened.end_offset(), reopened.latest_snapshot_id()) == (100, 100, snapshot_id)
    restarted = build(0, [0, 1], stored=ElectionState.with_elected_leader(2, 1), log=reopened)
    assert set(restarted.core.voters().ids()) == {0, 1, 5}  # the voter set comes back from the snapshot
    reopened.close()


def test_fetch_response_with_records_after_snapshot_over_file_log(tmp_path) -> None:
    log, _ = open_file_log(str(tmp_path))
    ctx = build(0, [0, 1], stored=ElectionState.with_elected_leader(2, 1), log=log)
    ctx.poll()
    snapshot_id = OffsetAndEpoch(10, 1)
    ctx.respond(answer_fetch_with_snapshot(ctx, snapshot_id), fs_answer(snapshot_id, snapshot_bytes(snapshot_id), 0))
    batch = encode_batch([SimpleRecord(value=b"x")] * 2, base_offset=10, partition_leader_epoch=2, timestamp_ms=0)
    ctx.respond(ctx.take_sent(FetchRequest)[-1],
                messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, high_watermark=12, records=batch))
    assert log.end_offset() == 12 and ctx.core.high_watermark == 12
    log.close()
