"""DeleteRecords, DescribeLogDirs, DescribeProducers and DescribeTopicPartitions against 1 controller + 3 brokers
(RF 3), with stock clients and the `pykraft delete-records` / `pykraft log-dirs` tools.

Every assertion is about what the processes did: offsets from ListOffsets and fetches, files and checkpoint files
on disk, sizes as os.stat sees them. Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from pykraft.storage.offset_checkpoints import read_offsets

from .data_plane_checks import bootstrap, partition, start_cluster, stop_cluster
from .helpers import wait_for

kafka = pytest.importorskip("kafka")
from kafka import TopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

TOPIC = "trim"
RECORDS = 400
VALUE = b"v" * 10_000  # 400 x 10 kB: four 1 MiB segments


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("logadmin") / "cluster", "plain")
    broker = cluster.broker_ids[0]
    cluster.cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[broker].port}", "--topic",
                TOPIC, "--partitions", "1", "--replication-factor", "3", "--config", "segment.bytes=1048576")
    wait_for(lambda: (p := partition(cluster, TOPIC)) is not None and len(p.isr) == 3, "the topic with a full ISR")
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks="all", enable_idempotence=True,
                                   linger_ms=5, max_request_size=2_000_000)
    for i in range(RECORDS):
        producer.send(TOPIC, key=str(i).encode(), value=VALUE)
    producer.flush(60)
    producer.close()
    yield cluster
    stop_cluster(cluster)


def _offsets(cluster, which: str) -> int:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster))
    tp = TopicPartition(TOPIC, 0)
    try:
        found = consumer.beginning_offsets([tp]) if which == "earliest" else consumer.end_offsets([tp])
        return found[tp]
    finally:
        consumer.close()


def _partition_dir(cluster, broker: int) -> Path:
    return cluster.nodes[broker].data_dir / f"{TOPIC}-0"


def _log_start_checkpoint(cluster, broker: int) -> int | None:
    return read_offsets(str(cluster.nodes[broker].data_dir / "log-start-offset-checkpoint")).get((TOPIC, 0))


def _segments(cluster, broker: int) -> list[int]:
    return sorted(int(p.stem) for p in _partition_dir(cluster, broker).glob("*.log"))


def test_delete_records_moves_every_replica_and_survives_a_restart(cluster):
    assert _offsets(cluster, "latest") == RECORDS
    assert all(len(_segments(cluster, b)) >= 3 for b in cluster.broker_ids)  # the setup really rolled segments
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        result = admin.delete_records({TopicPartition(TOPIC, 0): 250})
    finally:
        admin.close()
    answered = result[TopicPartition(TOPIC, 0)]
    assert getattr(answered, "low_watermark", None) == 250 or answered["low_watermark"] == 250
    assert _offsets(cluster, "earliest") == 250  # ListOffsets EARLIEST on the leader

    # Every replica's log-start-offset-checkpoint and segments: the maintenance round writes and deletes.
    def trimmed() -> bool:
        return all(_log_start_checkpoint(cluster, b) == 250 and _segments(cluster, b)[0] > 0
                   and _segments(cluster, b)[0] <= 250 for b in cluster.broker_ids)
    wait_for(trimmed, "every replica's checkpoint at 250 and the segments below it deleted", timeout=60)

    # A consumer below the start: OFFSET_OUT_OF_RANGE, reset to the new start (auto.offset.reset=earliest).
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=10_000)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek(tp, 10)
    first = next(iter(consumer))
    consumer.close()
    assert first.offset == 250

    # A leader change: the new leader's EARLIEST is the same; then a restart of every broker keeps it.
    old = partition(cluster, TOPIC).leader
    cluster.stop(old)
    wait_for(lambda: partition(cluster, TOPIC).leader not in (old, -1), "a new leader")
    assert _offsets(cluster, "earliest") == 250
    cluster.start(old)
    for broker in cluster.broker_ids:
        cluster.stop(broker)
        cluster.start(broker)
        wait_for(lambda: len(partition(cluster, TOPIC).isr) == 3, "the ISR full again after a restart", timeout=90)
    assert wait_for(lambda: _offsets(cluster, "earliest") == 250 or None, "EARLIEST after restarts")


def test_delete_records_errors_and_the_tool(cluster, tmp_path):
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap(cluster)})
    futures = admin.delete_records([CTopicPartition(TOPIC, 0, 300)], request_timeout=30)
    deleted = futures[CTopicPartition(TOPIC, 0, 300)].result(30)
    assert deleted.low_watermark == 300
    bad = admin.delete_records([CTopicPartition(TOPIC, 0, RECORDS + 10)], request_timeout=30)
    with pytest.raises(Exception, match="OFFSET_OUT_OF_RANGE|out of range"):
        bad[CTopicPartition(TOPIC, 0, RECORDS + 10)].result(30)

    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": 0, "offset": 320},
                                               {"topic": TOPIC, "partition": 5, "offset": 1},
                                               {"topic": "nope", "partition": 0, "offset": 1},
                                               {"topic": "plain", "partition": 0, "offset": 7}], "version": 1}))
    done = cluster.cli("delete-records", "--bootstrap-server", bootstrap(cluster), "--offset-json-file", str(spec))
    lines = done.stdout.splitlines()
    assert lines[:2] == ["Executing records delete operation", "Records delete operation completed:"]
    by_partition = {line.split("\t")[0]: line.split("\t")[1] for line in lines[2:]}
    assert by_partition["partition: trim-0"] == "low_watermark: 320"
    assert by_partition["partition: plain-0"].startswith("error: org.apache.kafka.common.errors.OffsetOutOfRange")
    assert "UnknownTopicOrPartitionException" in by_partition["partition: trim-5"]
    assert "UnknownTopicOrPartitionException" in by_partition["partition: nope-0"]

    spec.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": 0, "offset": -1}]}))
    done = cluster.cli("delete-records", "--bootstrap-server", bootstrap(cluster), "--offset-json-file", str(spec))
    assert done.stdout.splitlines()[2] == f"partition: {TOPIC}-0\tlow_watermark: {RECORDS}"  # -1: the HWM
    spec.write_text("{not json")
    failed = cluster.cli("delete-records", "--bootstrap-server", bootstrap(cluster), "--offset-json-file", str(spec),
                         check=False)
    assert failed.returncode == 1 and failed.stderr.strip().endswith("The input string is not a valid JSON")


def test_log_dirs_sizes_equal_the_files(cluster):
    done = cluster.cli("log-dirs", "--bootstrap-server", bootstrap(cluster), "--describe", "--topic-list", TOPIC)
    lines = done.stdout.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1] == "Received log directory information from brokers " + ",".join(map(str, cluster.broker_ids))
    assert lines[2].startswith('{"brokers":[{"broker":') and lines[2].endswith('"version":1}')
    described = json.loads(lines[2])
    assert sorted(b["broker"] for b in described["brokers"]) == cluster.broker_ids
    for entry in described["brokers"]:
        (log_dir,) = entry["logDirs"]
        assert list(log_dir) == ["partitions", "error", "logDir"] and log_dir["error"] is None
        assert log_dir["logDir"] == str(cluster.nodes[entry["broker"]].data_dir.resolve())
        (replica,) = log_dir["partitions"]
        assert replica["partition"] == f"{TOPIC}-0" and replica["isFuture"] is False and replica["offsetLag"] == 0
        files = sum(p.stat().st_size for p in _partition_dir(cluster, entry["broker"]).glob("*.log"))
        assert replica["size"] == files > 0

    missing = cluster.cli("log-dirs", "--bootstrap-server", bootstrap(cluster), "--describe", "--broker-list", "1,77",
                          check=False)
    assert missing.returncode == 1
    assert "ERROR: The given brokers do not exist from --broker-list: 1,77." in missing.stderr \
        or "do not exist from --broker-list: 77" in missing.stderr


def test_describe_log_dirs_with_kafka_python(cluster):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(cluster))
    try:
        found = admin.describe_log_dirs()
    finally:
        admin.close()
    # kafka-python asks every broker; each answers its one directory with both topics' replicas.
    assert sorted(entry["broker"] for entry in found) == cluster.broker_ids
    for entry in found:
        (log_dir,) = entry["log_dirs"]
        assert log_dir["error_code"] == 0 and 0 <= log_dir["usable_bytes"] <= log_dir["total_bytes"]
        sizes = {(t["name"], p["partition_index"]): p["partition_size"] for t in log_dir["topics"]
                 for p in t["partitions"]}
        files = sum(p.stat().st_size for p in _partition_dir(cluster, entry["broker"]).glob("*.log"))
        assert sizes[(TOPIC, 0)] == files and sizes[("plain", 0)] == 0


def test_describe_producers_and_topic_partitions_on_the_wire(cluster):
    from kio.schema.describe_producers.v0 import request as dp
    from kio.schema.describe_topic_partitions.v0 import request as dtp
    from kio.schema.types import TopicName
    from kio.static.primitive import i32

    from .metadata_probe import ask

    leader = partition(cluster, TOPIC).leader
    answer = ask(cluster.nodes[leader], dp.DescribeProducersRequest(topics=(dp.TopicRequest(
        name=TopicName(TOPIC), partition_indexes=(i32(0), i32(9))),)))
    first, unknown = answer.topics[0].partitions
    assert int(first.error_code) == 0 and len(first.active_producers) == 1  # the fixture's idempotent producer
    assert int(first.active_producers[0].last_sequence) == RECORDS - 1
    assert int(unknown.error_code) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    follower = next(b for b in cluster.broker_ids if b != leader)
    answer = ask(cluster.nodes[follower], dp.DescribeProducersRequest(topics=(dp.TopicRequest(
        name=TopicName(TOPIC), partition_indexes=(i32(0),)),)))
    assert int(answer.topics[0].partitions[0].error_code) == 6  # NOT_LEADER_OR_FOLLOWER

    page = ask(cluster.nodes[follower], dtp.DescribeTopicPartitionsRequest(
        topics=(), response_partition_limit=i32(1), cursor=None))
    assert [str(t.name) for t in page.topics] == ["plain"] and str(page.next_cursor.topic_name) == TOPIC
    page = ask(cluster.nodes[follower], dtp.DescribeTopicPartitionsRequest(
        topics=(), response_partition_limit=i32(1),
        cursor=dtp.Cursor(topic_name=TopicName(TOPIC), partition_index=i32(0))))
    (topic,) = page.topics
    assert str(topic.name) == TOPIC and page.next_cursor is None
    assert sorted(topic.partitions[0].replica_nodes) == cluster.broker_ids
    assert tuple(topic.partitions[0].eligible_leader_replicas) == ()


def test_a_paused_follower_holds_the_answer_until_the_timeout(cluster):
    from kio.schema.delete_records.v2 import request as dr
    from kio.schema.types import TopicName
    from kio.static.primitive import i32, i64
    import datetime

    from .metadata_probe import ask

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks="all")
    for i in range(5):
        producer.send(TOPIC, value=b"more")
    producer.flush(30)
    producer.close()
    end = _offsets(cluster, "latest")
    wait_for(lambda: len(partition(cluster, TOPIC).isr) == 3, "a full ISR")
    state = partition(cluster, TOPIC)
    follower = next(b for b in state.replicas if b != state.leader)
    cluster.signal(follower, signal.SIGSTOP)
    try:
        request = dr.DeleteRecordsRequest(topics=(dr.DeleteRecordsTopic(name=TopicName(TOPIC), partitions=(
            dr.DeleteRecordsPartition(partition_index=i32(0), offset=i64(end)),)),),
            timeout=datetime.timedelta(milliseconds=1500))
        answer = ask(cluster.nodes[state.leader], request)
        result = answer.topics[0].partitions[0]
        assert int(result.error_code) == 7  # REQUEST_TIMED_OUT: the paused follower never reported its start
    finally:
        cluster.signal(follower, signal.SIGCONT)
    wait_for(lambda: _log_start_checkpoint(cluster, follower) == end, "the resumed follower's start", timeout=60)


def test_bad_input_on_the_wire(cluster):
    import datetime

    from kio.schema.delete_records.v2 import request as dr
    from kio.schema.describe_log_dirs.v4 import request as dld
    from kio.schema.describe_topic_partitions.v0 import request as dtp
    from kio.schema.types import TopicName
    from kio.static.primitive import i32, i64

    from .metadata_probe import ask

    state = partition(cluster, TOPIC)
    follower = next(b for b in state.replicas if b != state.leader)

    def delete(node: int, topic: str, offset: int) -> int:
        answer = ask(cluster.nodes[node], dr.DeleteRecordsRequest(topics=(dr.DeleteRecordsTopic(
            name=TopicName(topic), partitions=(dr.DeleteRecordsPartition(partition_index=i32(0), offset=i64(offset)),)),),
            timeout=datetime.timedelta(milliseconds=5000)))
        return int(answer.topics[0].partitions[0].error_code)

    assert delete(follower, TOPIC, 1) == 6  # NOT_LEADER_OR_FOLLOWER
    assert delete(state.leader, TOPIC, -5) == 1  # OFFSET_OUT_OF_RANGE: negative, not -1
    assert delete(state.leader, "no-such-topic", 1) == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert delete(state.leader, "__consumer_offsets", 1) == 17  # INVALID_TOPIC_EXCEPTION: internal topics
    assert delete(state.leader, TOPIC, 0) == 0  # at or below the start: accepted, nothing moves
    assert _offsets(cluster, "earliest") > 0

    for topics in ((), (dld.DescribableLogDirTopic(topic=TopicName("no-such-topic"), partitions=(i32(0),)),)):
        answer = ask(cluster.nodes[follower], dld.DescribeLogDirsRequest(topics=topics))
        (result,) = answer.results
        assert int(result.error_code) == 0 and result.topics == ()  # the directory listed, no partition

    page = ask(cluster.nodes[follower], dtp.DescribeTopicPartitionsRequest(
        topics=(dtp.TopicRequest(name=TopicName("no-such-topic")),), response_partition_limit=i32(10), cursor=None))
    assert [int(t.error_code) for t in page.topics] == [3]
    page = ask(cluster.nodes[follower], dtp.DescribeTopicPartitionsRequest(
        topics=(dtp.TopicRequest(name=TopicName(TOPIC)),), response_partition_limit=i32(10),
        cursor=dtp.Cursor(topic_name=TopicName("plain"), partition_index=i32(0))))
    assert [int(t.error_code) for t in page.topics] == [42]  # INVALID_REQUEST: the cursor's topic is not listed
