"""DeleteTopics v1-v6 on the controller: by name or by id (v6), by name (v1-v5), with Kafka's per-entry errors."""

import datetime
import uuid

import pytest

from kio.schema.delete_topics.v6 import request as dt
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta

from pykraft.protocol.core_versions import to_request_version
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, apply, new_control, topic_id

ZERO = uuid.UUID(int=0)
T1, T2 = topic_id(1), topic_id(2)


def request(*entries):
    return dt.DeleteTopicsRequest(
        topics=tuple(dt.DeleteTopicState(name=None if n is None else TopicName(n), topic_id=i) for n, i in entries),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)))


def control_with_two_topics():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), name="a")
    add_partition(control, T2, 0, (2, 3), name="b")
    return control


def test_delete_by_name_and_by_id_writes_remove_topic_records_and_answers_with_both():
    control = control_with_two_topics()
    result = control.handle_delete_topics(request(("a", ZERO), (None, T2)))
    assert [r.topic_id for r in result.records] == [T1, T2]
    assert [(r.name, r.topic_id, r.error_code) for r in result.response.responses] == [
        ("a", T1, ErrorCode.NONE), ("b", T2, ErrorCode.NONE)]
    apply(control, result)
    assert control.topic_count() == 0 and control.partitions_with_broker_in_isr(2) == []
    encode_response(1, result.response)


def test_unknown_name_and_unknown_id_have_their_own_codes():
    result = control_with_two_topics().handle_delete_topics(request(("zzz", ZERO), (None, topic_id(9))))
    assert result.records == ()
    assert [r.error_code for r in result.response.responses] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                                 ErrorCode.UNKNOWN_TOPIC_ID]


def test_both_or_neither_of_name_and_id_is_invalid_request():
    result = control_with_two_topics().handle_delete_topics(request(("a", T1), (None, ZERO)))
    assert result.records == ()
    assert [(r.error_code, r.error_message) for r in result.response.responses] == [
        (ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."),
        (ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")]


def test_duplicates_are_invalid_request_and_delete_nothing_for_that_topic():
    result = control_with_two_topics().handle_delete_topics(request(("a", ZERO), ("a", ZERO), (None, T2), (None, T2)))
    assert result.records == ()
    assert [r.error_message for r in result.response.responses] == ["Duplicate topic name."] * 2 + ["Duplicate topic id."] * 2


@pytest.mark.parametrize("version", range(1, 6))
def test_v1_to_v5_name_topics_in_topic_names_and_delete_them(version):
    """Issue 12: v0-v5 carry `topic_names` (v6 `topics`); reading `topics` failed every one of them."""
    from pykraft.protocol.apis import request_class

    old = request_class(20, version)(topic_names=(TopicName("a"), TopicName("zzz")),
                                     timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)))
    control = control_with_two_topics()
    result = control.handle_delete_topics(old)
    assert [r.topic_id for r in result.records] == [T1]
    answer = to_request_version(result.response, version)
    assert [(r.name, r.error_code) for r in answer.responses] == [
        ("a", ErrorCode.NONE), ("zzz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    encode_response(1, answer)
