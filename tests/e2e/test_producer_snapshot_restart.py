"""A stock idempotent producer (confluent-kafka) across a graceful restart of its partition leader: the stopped
broker leaves a producer snapshot at its log end (Kafka's format), segments rolled meanwhile left theirs, and the
queue read back has no loss and no duplicate. Waits poll with deadlines; nothing asserts a duration."""

from __future__ import annotations

import pytest

from pykraft.broker.producer_snapshot import decode_producer_snapshot
from pykraft.records import iter_batches

from .data_plane_checks import QueueCheck, bootstrap, partition, start_cluster, stop_cluster
from .helpers import wait_for
from .stock_clients import consume, produce

TOPIC = "idem"
RECORDS = 300


def _log_end(partition_dir) -> int:
    end = 0
    for segment in sorted(partition_dir.glob("*.log")):
        for batch in iter_batches(segment.read_bytes(), allow_truncated_tail=True):
            end = batch.next_offset
    return end


def test_a_gracefully_restarted_leader_keeps_the_producer_state_in_snapshots(tmp_path):
    pytest.importorskip("confluent_kafka")
    cluster = start_cluster(tmp_path / "cluster", TOPIC, {"log.roll.ms": "300"})  # segments roll while producing
    try:
        stopped: list[tuple[int, int | None]] = []
        leader = partition(cluster, TOPIC).leader
        directory = cluster.nodes[leader].data_dir / f"{TOPIC}-0"

        def on_sent(i: int) -> None:
            # Stop once a third is sent and the leader rolled twice (librdkafka may put the first second of records
            # into one batch while it starts, and a roll happens between batches only).
            if not stopped and i >= RECORDS // 3 and len(list(directory.glob("*.log"))) >= 3:
                stopped.append((i, cluster.stop(leader)))
            elif len(stopped) == 1 and i >= stopped[0][0] + RECORDS // 4:
                snapshots = {int(p.name[:20]): p for p in directory.glob("*.snapshot")}
                end = _log_end(directory)
                stopped.append((end, len(snapshots)))
                assert end in snapshots, (end, sorted(snapshots))  # the clean-shutdown snapshot at the log end
                entries = decode_producer_snapshot(snapshots[end].read_bytes())
                assert [e for e in entries if e.producer_id >= 0 and e.last_offset == end - 1]
                cluster.start(leader)

        acknowledged = produce("confluent-kafka", bootstrap(cluster), TOPIC, RECORDS, on_sent)
        assert len(stopped) == 2 and stopped[0][1] == 0  # stopped (a clean exit) and restarted
        assert stopped[1][1] >= 3, sorted(p.name for p in directory.iterdir())  # roll snapshots and the shutdown one
        wait_for(lambda: len(partition(cluster, TOPIC).isr) == 3, "the restarted broker back in the ISR", timeout=90)
        check = QueueCheck.of(acknowledged, consume("confluent-kafka", bootstrap(cluster), TOPIC, acknowledged))
        assert check.lost == () and check.duplicated == () and check.reordered == 0, check
        assert "producer snapshot" not in cluster.server_log(leader)  # none was unreadable
    finally:
        stop_cluster(cluster)
