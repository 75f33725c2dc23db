"""`pykraft delete-records` / `pykraft log-dirs`: Kafka's output shapes, Java's HashMap order, the offset file."""

from __future__ import annotations

import json

import pytest

from pykraft.admin.log_admin import LogDirInfo, ReplicaLogInfo
from pykraft.cli import log_tools_output as out
from pykraft.cli.delete_records_cmd import parse_offsets
from pykraft.cli.metadata_quorum_cmd import ToolFailure
from pykraft.protocol.errors import ErrorCode


def test_java_hash_codes() -> None:
    assert out.java_string_hash("hello") == 99162322  # "hello".hashCode()
    assert out.java_string_hash("polygenelubricants") == -2147483648  # the classic Integer.MIN_VALUE hash
    assert out.topic_partition_hash("foo", 0) == 31 * 31 + out.java_string_hash("foo")


def test_hash_map_order_of_the_tools_keys() -> None:
    assert out.java_hash_order(["version", "brokers"], out.java_string_hash) == ["brokers", "version"]
    assert out.java_hash_order(["logDir", "error", "partitions"], out.java_string_hash) == \
        ["partitions", "error", "logDir"]
    assert out.java_hash_order(["partition", "size", "offsetLag", "isFuture"], out.java_string_hash) == \
        ["partition", "size", "offsetLag", "isFuture"]
    assert out.java_hash_order([3, 17, 1, 2], lambda v: v) == [17, 1, 2, 3]  # 17 shares bucket 1, put before 1


def test_log_dirs_json_is_kafkas_shape() -> None:
    infos = {1: [LogDirInfo("/d", ErrorCode.NONE, (ReplicaLogInfo("t", 0, 77, 0, False),
                                                     ReplicaLogInfo("u", 1, 5, 0, False)))],
             2: [LogDirInfo("/e", ErrorCode.KAFKA_STORAGE_ERROR, ())]}
    text = out.log_dirs_json(infos, {"t"})
    assert text.startswith('{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":77,'
                           '"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/d"}]}')
    parsed = json.loads(text)
    assert parsed["version"] == 1
    assert parsed["brokers"][1]["logDirs"][0]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"


def test_delete_records_lines() -> None:
    lines = out.delete_records_lines({("t", 0): 5, ("t", 1): ErrorCode.OFFSET_OUT_OF_RANGE})
    assert lines[:2] == ["Executing records delete operation", "Records delete operation completed:"]
    assert "partition: t-0\tlow_watermark: 5" in lines
    assert "partition: t-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset " \
           "is not within the range of offsets maintained by the server." in lines


@pytest.mark.parametrize("text, message", [
    ("{", "The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"version": 1}', "Missing partitions field"),
    ('{"partitions": [{"topic": "t", "offset": 1}]}', "No such field exists: `partition`"),
    ('{"partitions": [{"topic": "t", "partition": 0, "offset": 1}, {"topic": "t", "partition": 0, "offset": 2}]}',
     "Offset json file contains duplicate topic partitions: t-0"),
])
def test_bad_offset_files(text: str, message: str) -> None:
    with pytest.raises(ToolFailure, match=message):
        parse_offsets(text)


def test_offset_file_without_version_is_version_1() -> None:
    assert parse_offsets('{"partitions": [{"topic": "t", "partition": 2, "offset": -1}]}') == {("t", 2): -1}
