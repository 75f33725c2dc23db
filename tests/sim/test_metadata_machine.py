"""sim/hosts/metadata_machine.py: what the simulator's controller host is told after each commit.

metadata_swarm seed 6006749 (ActiveControllerImage, "controller (active=False) differs from the committed image
at 25"): node 1 won epoch 2; its commit of offsets 14..22 ended with the epoch's LeaderChange control batch (22),
a snapshot was taken at 23 and the log before it deleted. The host was only told of the last METADATA record
(21), so HostedController.committed_offset stayed 21. Node 1 was then cut off with its uncommitted writes 23..28;
when it lost leadership to node 2 (epoch 3) the rebuild (load_committed) refused the snapshot at 23 (> 21 + 1),
found the log starting at 23 and left the controller EMPTY while the committed image held 4 brokers, 2 topics
and 6 partitions. The node's runtime passes CommitBatches.last_offset, so the real node was not affected.
"""

from __future__ import annotations

from typing import Any

from kio.schema.leader_change_message.v0 import LeaderChangeMessage
from kio.static.primitive import i16, i32

from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.control import encode_control_batch
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.sim.engine.runner import run
from pykraft.sim.hosts.metadata_machine import MetadataMachine


class _Image:
    def __init__(self) -> None:
        self.replayed: list[int] = []

    def replay(self, _record: Any, offset: int) -> None:
        self.replayed.append(offset)

    def snapshot_records(self) -> list[Any]:
        return []


def _level(n: int) -> FeatureLevelRecordV0:
    return FeatureLevelRecordV0(name="metadata.version", feature_level=i16(n))


def _leader_change(base: int) -> bytes:
    message = LeaderChangeMessage(version=i16(0), leader_id=i32(1), voters=(), granting_voters=())
    return encode_control_batch([message], base_offset=base, partition_leader_epoch=2, timestamp_ms=1)


def test_every_commit_reports_its_last_offset_even_without_metadata_records() -> None:
    calls: list[tuple[Any, ...]] = []
    machine = MetadataMachine(_Image(), lambda *args: calls.append(args))
    data = encode_batch([SimpleRecord(encode_metadata_record(_level(20))), SimpleRecord(b'{"not": "metadata"}')],
                        base_offset=0, partition_leader_epoch=1, timestamp_ms=1)
    machine.apply(data)
    machine.apply(_leader_change(2))
    assert calls == [([(0, _level(20))], 1), ([], 2)]  # the batch's end, and the control batch alone
    assert machine.next_offset == 3


def test_metadata_swarm_seed_6006749_keeps_the_deposed_controller_on_the_committed_image() -> None:
    result = run(6006749, "metadata_swarm")
    assert result.ok, result.report()
    assert result.stats["rebuilds"] >= 1  # the rebuild after losing leadership with uncommitted writes ran
