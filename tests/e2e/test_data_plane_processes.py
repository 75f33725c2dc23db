"""Issue 14's multi-process checks: stock clients produce to and consume from a 3-broker, RF-3 topic.

The ISR and leadership assertions read the controller's committed metadata log from disk (metadata_probe), so
they are about committed PartitionChangeRecords. Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import datetime
import signal
import time

import pytest

from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch

from .data_plane_checks import LAG_MS, QueueCheck, bootstrap, partition, start_cluster, stop_cluster
from .helpers import wait_for
from .stock_clients import CLIENTS, consume, produce
from .metadata_probe import ask

kafka = pytest.importorskip("kafka")
TOPIC = "events"
RECORDS = 300


@pytest.fixture
def cluster(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", TOPIC)
    yield cluster
    stop_cluster(cluster)


@pytest.mark.parametrize("client", CLIENTS)
def test_idempotent_acks_all_survives_a_sigkilled_leader(cluster, client):
    pytest.importorskip({"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent-kafka": "confluent_kafka"}[client])
    killed: list[int] = []

    def on_sent(i: int) -> None:
        if i == RECORDS // 3:
            killed.append(partition(cluster, TOPIC).leader)
            cluster.kill(killed[0])
        if i == 2 * RECORDS // 3:
            cluster.start(killed[0])

    acknowledged = produce(client, bootstrap(cluster), TOPIC, RECORDS, on_sent)
    assert len(acknowledged) > RECORDS // 2  # the workload really ran across the failover
    # The restarted broker rejoins the ISR once it caught up (its unreplicated tail, if any, truncated).
    wait_for(lambda: len(partition(cluster, TOPIC).isr) == 3, "the restarted broker back in the ISR", timeout=90)
    check = QueueCheck.of(acknowledged, consume(client, bootstrap(cluster), TOPIC, acknowledged))
    assert check.lost == () and check.duplicated == () and check.reordered == 0, check
    assert partition(cluster, TOPIC).leader_epoch > 0  # the leadership really moved


def test_a_stopped_follower_leaves_the_isr_and_returns(cluster):
    before = partition(cluster, TOPIC)
    follower = next(b for b in before.replicas if b != before.leader)
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks="all", request_timeout_ms=5000)
    producer.send(TOPIC, b"rec-0").get(30)
    cluster.signal(follower, signal.SIGSTOP)

    def shrunk_isr():
        now = partition(cluster, TOPIC)
        if follower in now.isr:
            producer.send(TOPIC, b"rec-1")  # keep the stopped follower behind the leader's log end
            return None
        return now

    shrunk = wait_for(shrunk_isr, f"follower {follower} out of the ISR after replica.lag.time.max.ms={LAG_MS}",
                      timeout=90)
    assert shrunk.partition_epoch > before.partition_epoch and len(shrunk.isr) == 2
    producer.send(TOPIC, b"rec-2").get(30)  # min.insync.replicas=2 still holds: acks=all works
    cluster.signal(follower, signal.SIGCONT)
    back = wait_for(lambda: follower in partition(cluster, TOPIC).isr and partition(cluster, TOPIC),
                    f"follower {follower} back in the ISR", timeout=90)
    assert back.partition_epoch > shrunk.partition_epoch
    producer.close(10)


def _produce(cluster, broker: int, records: bytes, acks: int = -1):
    from kio.schema.produce.v9 import request as pr

    message = pr.ProduceRequest(acks=acks, timeout=datetime.timedelta(seconds=10), topic_data=(
        pr.TopicProduceData(name=TOPIC, partition_data=(pr.PartitionProduceData(index=0, records=records),)),))
    answer = ask(cluster.nodes[broker], message)
    [topic] = answer.responses
    [data] = topic.partition_responses
    return ErrorCode(int(data.error_code)), int(data.base_offset)


def _segment_bytes(cluster, broker: int) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((cluster.nodes[broker].data_dir / f"{TOPIC}-0").glob("*.log")))


def test_bad_batches_and_produce_to_a_follower_get_kafkas_error_codes_and_change_no_log(cluster):
    leader_id = partition(cluster, TOPIC).leader
    follower = next(b for b in cluster.broker_ids if b != leader_id)
    good = bytearray(encode_batch([SimpleRecord(value=b"ok")], base_offset=0, partition_leader_epoch=-1,
                                  timestamp_ms=1))
    # The controller's log has the partition; a broker's metadata cache may be a moment behind it.
    not_there_yet = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    first = wait_for(lambda: (lambda answer: None if answer == not_there_yet else answer)(
        _produce(cluster, leader_id, bytes(good))), "the leader's cache knows the topic")
    assert first == (ErrorCode.NONE, 0)
    wait_for(lambda: _produce(cluster, follower, bytes(good)) != not_there_yet, "the follower's cache knows it")
    before = _segment_bytes(cluster, leader_id)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    wrong_magic = bytearray(good)
    wrong_magic[16] = 1
    big = encode_batch([SimpleRecord(value=b"x" * 2_000_000)], base_offset=0, partition_leader_epoch=-1,
                       timestamp_ms=1)
    assert _produce(cluster, leader_id, bytes(corrupt))[0] is ErrorCode.CORRUPT_MESSAGE
    assert _produce(cluster, leader_id, bytes(wrong_magic))[0] is ErrorCode.INVALID_RECORD
    assert _produce(cluster, leader_id, bytes(good) * 2)[0] is ErrorCode.INVALID_RECORD
    assert _produce(cluster, leader_id, big)[0] is ErrorCode.MESSAGE_TOO_LARGE
    assert _produce(cluster, leader_id, bytes(good), acks=2)[0] is ErrorCode.INVALID_REQUIRED_ACKS
    assert _produce(cluster, follower, bytes(good))[0] is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _segment_bytes(cluster, leader_id) == before
    assert _produce(cluster, leader_id, bytes(good)) == (ErrorCode.NONE, 1)  # the log goes on where it was


def _partition_dirs(cluster, topic: str) -> list[int]:
    return [b for b in cluster.broker_ids if (cluster.nodes[b].data_dir / f"{topic}-0").is_dir()]


def test_auto_created_topic_takes_records_and_deleting_it_removes_its_logs(cluster):
    def produced() -> int | None:
        # acks=1: the new topic has one replica, below this cluster's min.insync.replicas=2 (acks=all would get
        # NOT_ENOUGH_REPLICAS, as from Kafka).
        producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks=1, max_block_ms=5000)
        try:
            return producer.send("made-on-demand", b"first").get(20).offset + 1
        finally:
            producer.close(5)

    assert wait_for(produced, "a record in the auto-created topic") == 1  # offset 0
    holders = wait_for(lambda: _partition_dirs(cluster, "made-on-demand"), "the partition directory on a broker")
    assert len(holders) == 1  # default.replication.factor 1
    cluster.cli("topics", "delete", "--bootstrap-server", bootstrap(cluster).split(",")[0], "--topic",
                "made-on-demand")
    wait_for(lambda: not _partition_dirs(cluster, "made-on-demand"), "the deleted topic's log gone from the broker")
    assert _partition_dirs(cluster, TOPIC) == cluster.broker_ids  # other topics untouched


def _produce_answer(cluster, broker: int, records: bytes):
    from kio.schema.produce.v9 import request as pr

    message = pr.ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=10), topic_data=(
        pr.TopicProduceData(name=TOPIC, partition_data=(pr.PartitionProduceData(index=0, records=records),)),))
    [topic] = ask(cluster.nodes[broker], message).responses
    [data] = topic.partition_responses
    return data


def test_topic_configs_altered_by_a_stock_admin_apply_on_the_live_leader(cluster):
    """min.insync.replicas and message.timestamp.type set with confluent-kafka's IncrementalAlterConfigs: the
    running leader applies them (no restart), and kafka-python's consumer reads the LogAppendTime it stamped."""
    pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})

    def alter(key: str, value: str) -> None:
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        for future in admin.incremental_alter_configs([ConfigResource("topic", TOPIC,
                                                                      incremental_configs=[entry])]).values():
            future.result(30)

    leader = partition(cluster, TOPIC).leader
    good = encode_batch([SimpleRecord(value=b"ok")], base_offset=0, partition_leader_epoch=-1, timestamp_ms=1)

    def error_is(code: ErrorCode):
        return lambda: ErrorCode(int(_produce_answer(cluster, leader, good).error_code)) is code

    wait_for(error_is(ErrorCode.NONE), "acks=all accepted with the cluster's min.insync.replicas=2")
    alter("min.insync.replicas", "4")  # above the replication factor: acks=all can never be met
    wait_for(error_is(ErrorCode.NOT_ENOUGH_REPLICAS), "the leader applying the topic's min.insync.replicas=4")
    alter("min.insync.replicas", "3")
    wait_for(error_is(ErrorCode.NONE), "acks=all accepted again with min.insync.replicas=3 (ISR of 3)")
    alter("message.timestamp.type", "LogAppendTime")
    before = int(time.time() * 1000)
    stamped = wait_for(lambda: (lambda d: d if d.log_append_time is not None else None)(
        _produce_answer(cluster, leader, good)), "a Produce answered with its log append time")
    stamped_ms = int(stamped.log_append_time.timestamp() * 1000)
    assert stamped_ms >= before - 1000 and int(stamped.error_code) == 0
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), enable_auto_commit=False)
    tp = kafka.TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek(tp, int(stamped.base_offset))
    records = wait_for(lambda: consumer.poll(timeout_ms=1000).get(tp), "the stamped record consumed")
    assert (records[0].timestamp_type, records[0].timestamp) == (1, stamped_ms)  # 1: LogAppendTime
    consumer.close()
