"""`pykraft dump-log` on user-topic segments and `__consumer_offsets`, as Kafka's kafka-dump-log prints them:
batches only by default, records with --deep-iteration, keys and values with --print-data-log, the group
coordinator's records with --offsets-decoder; metadata logs still decoded as metadata."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pykraft.admin.consumer_protocol import encode_assignment, encode_subscription
from pykraft.cli.main import app
from pykraft.records import SimpleRecord
from pykraft.records.group_records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    encode_group_value,
    encode_key,
    encode_offset_value,
)
from pykraft.records.producer_batch import encode_producer_batch

runner = CliRunner()


def segment(tmp_path: Path, name: str, *batches: bytes) -> Path:
    path = tmp_path / name / "00000000000000000000.log"
    path.parent.mkdir()
    data = bytearray()
    offset = 0
    for batch in batches:
        patched = bytearray(batch)
        patched[0:8] = offset.to_bytes(8, "big")
        data += patched
        offset += int.from_bytes(batch[57:61], "big")
    path.write_bytes(bytes(data))
    return path


def dump(*args: str) -> list[str]:
    result = runner.invoke(app, ["dump-log", *args])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_a_user_topic_is_not_decoded_as_metadata(tmp_path):
    batch = encode_producer_batch([SimpleRecord(b"hello", b"k1", headers=(("h", b"x"),)), SimpleRecord(b"world")],
                                  timestamp_ms=1000, producer_id=5, producer_epoch=0, base_sequence=10)
    path = segment(tmp_path, "orders-0", batch)
    shallow = dump(str(path))
    assert len(shallow) == 3 and shallow[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 10 "
                                                       "lastSequence: 11 producerId: 5")
    deep = dump("--deep-iteration", str(path))
    assert deep[3:] == ["| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 5 sequence: 10 headerKeys: [h]",
                        "| offset: 1 CreateTime: 1000 keySize: -1 valueSize: 5 sequence: 11 headerKeys: []"]
    data = dump("--print-data-log", str(path))
    assert data[3].endswith("headerKeys: [h] key: k1 payload: hello") and data[4].endswith("payload: world")
    assert dump("--print-data-log", "--skip-record-metadata", str(path))[3] == "| key: k1 payload: hello"
    assert "payload:" not in "\n".join(deep) and "undecodable" not in "\n".join(data)


def test_consumer_offsets_records_print_as_kafkas_offsets_decoder(tmp_path):
    member = MemberValue("m-1", None, "c", "/127.0.0.1", 300000, 45000, encode_subscription(["t"]),
                         encode_assignment([("t", 0)]))
    records = [SimpleRecord(encode_offset_value(OffsetValue(5, 2, "", 77)), encode_key(OffsetKey("g", "t", 0))),
               SimpleRecord(encode_group_value(GroupValue("consumer", 1, "range", "m-1", 88, (member,))),
                            encode_key(GroupKey("g"))),
               SimpleRecord(None, encode_key(OffsetKey("g", "t", 1)))]
    path = segment(tmp_path, "__consumer_offsets-3", encode_producer_batch(records, timestamp_ms=1))
    lines = dump("--offsets-decoder", str(path))
    assert lines[3].endswith(' key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: '
                             '{"version":"3","data":{"offset":5,"leaderEpoch":2,"metadata":"","commitTimestamp":77}}')
    assert lines[4].endswith(
        ' key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":1,"protocol":"range","leader":"m-1","currentStateTimestamp":88,"members":[{"memberId":"m-1",'
        '"groupInstanceId":null,"clientId":"c","clientHost":"/127.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":45000,"subscription":{"topics":["t"],"userData":null,"ownedPartitions":[],'
        '"generationId":-1,"rackId":null},"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0]}],'
        '"userData":null}}]}}')
    assert lines[5].endswith('"partition":1}} payload: <DELETE>')


def test_a_metadata_log_is_still_decoded_without_a_flag(tmp_path):
    from pykraft.cli.sample_log import write_sample_log

    log = write_sample_log(tmp_path / "sample")[0]
    assert any("payload: {\"type\":\"REGISTER_BROKER_RECORD\"" in line for line in dump(str(log)))


def test_kip848_consumer_group_records_print_as_kafkas_json(tmp_path):
    import uuid

    from pykraft.records import consumer_group_records as cg
    from pykraft.records.uuids import uuid_to_kafka_str
    topic_id = uuid.UUID(int=9)
    records = [
        SimpleRecord(cg.encode_value(cg.GroupEpochValue(2)), cg.encode_key(cg.ConsumerGroupKey(3, "g"))),
        SimpleRecord(cg.encode_value(cg.MemberMetadataValue(None, None, "c", "/h", ("t",), None, 300000, None)),
                     cg.encode_key(cg.ConsumerGroupKey(5, "g", "m-1"))),
        SimpleRecord(cg.encode_value(cg.CurrentAssignmentValue(2, 1, 0, {topic_id: frozenset({1, 0})}, {})),
                     cg.encode_key(cg.ConsumerGroupKey(8, "g", "m-1"))),
        SimpleRecord(None, cg.encode_key(cg.ConsumerGroupKey(16, "g", "t.*")))]
    path = segment(tmp_path, "__consumer_offsets-1", encode_producer_batch(records, timestamp_ms=1))
    lines = dump("--offsets-decoder", str(path))
    assert lines[3].endswith(' key: {"type":"3","data":{"groupId":"g"}} payload: {"version":"0","data":{"epoch":2}}')
    assert lines[4].endswith(
        ' key: {"type":"5","data":{"groupId":"g","memberId":"m-1"}} payload: {"version":"0","data":{"instanceId":null,'
        '"rackId":null,"clientId":"c","clientHost":"/h","subscribedTopicNames":["t"],"subscribedTopicRegex":null,'
        '"rebalanceTimeoutMs":300000,"serverAssignor":null}}')
    assert lines[5].endswith(
        '"data":{"memberEpoch":2,"previousMemberEpoch":1,"state":0,"assignedPartitions":[{"topicId":"'
        + uuid_to_kafka_str(topic_id) + '","partitions":[0,1]}],"partitionsPendingRevocation":[]}}')
    assert lines[6].endswith(' key: {"type":"16","data":{"groupId":"g","regularExpression":"t.*"}} payload: <DELETE>')
