"""wire_build.make: a message built at any version from one set of values keeps the fields that version has, drops the
others and gives every other required field Kafka's zero value. The field plan is worked out once per class (the Fetch
and Produce answers build several messages per request); the oracle is error_responses.zero_entity, the builder of
error answers, which applies the same rule field by field on every call."""

from __future__ import annotations

import uuid

import pytest

from pykraft.node.apis.wire_build import make, response_namespace
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.error_responses import zero_entity
from pykraft.protocol.errors import ErrorCode

PARTITION_VALUES = {"partition_index": 3, "error_code": ErrorCode.NONE, "high_watermark": 10, "last_stable_offset": 9,
                    "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
                    "records": b"", "not_a_field": 1}


def _oracle(cls: type, values: dict) -> object:
    known = {f for f in cls.__dataclass_fields__}  # type: ignore[attr-defined]
    return zero_entity(cls, {k: v for k, v in values.items() if k in known})


@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 15, 16, 17])
def test_fetch_answer_parts_match_the_field_by_field_builder_at_every_version(version: int) -> None:
    ns = response_namespace(ApiKey.FETCH, version)
    for _ in range(2):  # the second build reuses the plan of the first
        data = make(ns.PartitionData, **PARTITION_VALUES)
        assert data == _oracle(ns.PartitionData, PARTITION_VALUES)
        topic_values = {"topic": "t", "topic_id": uuid.UUID(int=7), "partitions": (data,)}
        topic = make(ns.FetchableTopicResponse, **topic_values)
        assert topic == _oracle(ns.FetchableTopicResponse, topic_values)
        answer = make(ns.FetchResponse, error_code=ErrorCode.NONE, session_id=0, responses=(topic,))
        assert answer == _oracle(ns.FetchResponse, {"error_code": ErrorCode.NONE, "session_id": 0,
                                                    "responses": (topic,)})
    assert (getattr(topic, "topic", None) == "t") == (version < 13)  # v13 names topics by id only
    assert (getattr(topic, "topic_id", None) == uuid.UUID(int=7)) == (version >= 13)


def test_values_given_win_over_the_zero_values_and_builds_do_not_share_given_values() -> None:
    ns = response_namespace(ApiKey.FETCH, 17)
    first = make(ns.PartitionData, partition_index=1, high_watermark=5)
    second = make(ns.PartitionData, partition_index=2)
    assert (first.partition_index, first.high_watermark) == (1, 5)
    assert (second.partition_index, second.high_watermark) == (2, 0)  # the zero value, not the last build's
    assert second.records is None or second.records == b""


def test_the_namespace_of_a_version_is_the_module_of_its_response_class() -> None:
    assert response_namespace(ApiKey.PRODUCE, 9).__name__ == "kio.schema.produce.v9.response"
    assert response_namespace(ApiKey.PRODUCE, 9) is response_namespace(ApiKey.PRODUCE, 9)
