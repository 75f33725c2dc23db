"""error_response_for: a top-level error response for any registered request type."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.protocol.apis import ApiKey, request_class, response_class
from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.error_responses import error_response_for, has_top_level_error_code
from pykraft.protocol.errors import ErrorCode

from .helpers import REGISTRY_PAIRS, pair_id, unframe

WITH_ERROR_CODE = [p for p in REGISTRY_PAIRS if has_top_level_error_code(response_class(*p))]
WITHOUT_ERROR_CODE = [p for p in REGISTRY_PAIRS if p not in WITH_ERROR_CODE]


def test_only_metadata_before_v13_lacks_a_top_level_error_code() -> None:
    assert WITHOUT_ERROR_CODE == [(ApiKey.METADATA, v) for v in range(13)]


@pytest.mark.parametrize("pair", WITH_ERROR_CODE, ids=pair_id)
def test_error_response_encodes_and_carries_the_error(pair: tuple[ApiKey, int]) -> None:
    response = error_response_for(pair, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert type(response) is response_class(*pair)
    decoded = decode_response(unframe(encode_response(11, response)), *pair)
    assert decoded.message == response
    assert ErrorCode.from_kio(decoded.message.error_code) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    # Every collection is empty: the error says it all.
    for field_obj in dataclasses.fields(response):
        value = getattr(response, field_obj.name)
        if isinstance(value, tuple):
            assert value == (), field_obj.name


@pytest.mark.parametrize("pair", WITHOUT_ERROR_CODE, ids=pair_id)
def test_responses_without_a_top_level_error_code_are_refused(pair: tuple[ApiKey, int]) -> None:
    with pytest.raises(ValueError, match="no top-level error code"):
        error_response_for(pair, ErrorCode.UNSUPPORTED_VERSION)


def test_accepts_a_class_an_instance_or_a_key_version_pair() -> None:
    by_class = error_response_for(VoteRequest, ErrorCode.INVALID_REQUEST)
    instance = VoteRequest(cluster_id=None, topics=())
    assert error_response_for(instance, ErrorCode.INVALID_REQUEST) == by_class
    assert error_response_for((ApiKey.VOTE, 2), ErrorCode.INVALID_REQUEST) == by_class


def test_schema_defaults_are_kept_and_other_fields_start_at_zero() -> None:
    response = error_response_for(DescribeQuorumRequest, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert response.error_message is None  # nullable with a null default in the schema
    assert response.topics == () and response.nodes == ()
    fetch = error_response_for((ApiKey.FETCH, 17), ErrorCode.BROKER_NOT_AVAILABLE)
    assert fetch.throttle_time.total_seconds() == 0 and fetch.session_id == 0


def test_error_message_is_set_where_the_response_has_one() -> None:
    response = error_response_for(DescribeQuorumRequest, ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message="go away")
    assert response.error_message == "go away"
    # Vote responses have no message field; the argument is ignored rather than failing.
    assert not hasattr(error_response_for(VoteRequest, ErrorCode.NONE, error_message="x"), "error_message")


# ---- per-item errors: every API and version a node serves (issue 12: ElectLeaders v0 could not be answered) ------
def _served_pairs() -> list[tuple[ApiKey, int]]:
    from pykraft.node.runtime.served_apis import CONTROLLER_HANDLED as HOST_APIS
    from pykraft.protocol.apis import NODE_RUNTIME_APIS

    pairs = {(key, v) for key, versions in NODE_RUNTIME_APIS for v in range(versions.min_version,
                                                                              versions.max_version + 1)}
    pairs |= {(ApiKey(key), v) for key, (low, high) in HOST_APIS.items() for v in range(low, high + 1)}
    return sorted(pairs)


# The configuration APIs (DescribeConfigs, AlterConfigs, CreatePartitions, IncrementalAlterConfigs): answered per
# resource or topic; built here for every version kio has, whether or not this node serves them yet.
CONFIG_PAIRS = [(key, v) for key, versions in ((32, range(1, 5)), (33, range(0, 3)), (37, range(0, 4)),
                                               (44, range(0, 2))) for v in versions]


@pytest.mark.parametrize("pair", CONFIG_PAIRS, ids=lambda p: f"{p[0]}-v{p[1]}")
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_configuration_requests_get_per_resource_error_answers(pair: tuple[int, int], data) -> None:
    request = data.draw(st.from_type(request_class(*pair)))
    response = error_response_for(request, ErrorCode.NOT_CONTROLLER, error_message="moved")
    decoded = decode_response(unframe(encode_response(3, response)), *pair).message
    items = getattr(decoded, "results", None) or getattr(decoded, "responses", ())
    named = request.topics if pair[0] == 37 else request.resources
    assert len(items) == len(named)
    assert {ErrorCode(i.error_code) for i in items} <= {ErrorCode.NOT_CONTROLLER}


def _error_codes(value: object) -> list[int]:
    """Every ErrorCode field anywhere in a kio entity."""
    if isinstance(value, tuple):
        return [code for item in value for code in _error_codes(item)]
    if not dataclasses.is_dataclass(value):
        return []
    found = []
    for field_obj in dataclasses.fields(value):
        inner = getattr(value, field_obj.name)
        if field_obj.metadata.get("kafka_type") == "error_code":
            found.append(int(inner))
        else:
            found += _error_codes(inner)
    return found


@pytest.mark.parametrize("pair", _served_pairs(), ids=pair_id)
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_served_request_gets_an_error_answer_that_encodes(pair: tuple[ApiKey, int], data) -> None:
    request = data.draw(st.from_type(request_class(*pair)))
    response = error_response_for(request, ErrorCode.UNKNOWN_SERVER_ERROR, error_message="boom")
    assert type(response) is response_class(*pair)
    decoded = decode_response(unframe(encode_response(3, response)), *pair).message
    codes = _error_codes(decoded)
    assert set(codes) <= {ErrorCode.UNKNOWN_SERVER_ERROR}
    if has_top_level_error_code(type(response)):
        assert ErrorCode(decoded.error_code) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_elect_leaders_v0_is_answered_per_partition() -> None:
    from kio.schema.elect_leaders.v0 import request as el0

    request = el0.ElectLeadersRequest(topic_partitions=(el0.TopicPartitions(topic="t", partitions=(1, 2)),))
    response = error_response_for(request, ErrorCode.UNKNOWN_SERVER_ERROR, error_message="boom")
    (topic,) = response.replica_election_results
    assert topic.topic == "t"
    assert [(p.partition_id, p.error_code, p.error_message) for p in topic.partition_result] == [
        (1, ErrorCode.UNKNOWN_SERVER_ERROR, "boom"), (2, ErrorCode.UNKNOWN_SERVER_ERROR, "boom")]
    # Naming no partitions (all of them): nothing to attach the error to, as in Kafka.
    assert error_response_for(el0.ElectLeadersRequest(topic_partitions=None),
                              ErrorCode.UNKNOWN_SERVER_ERROR).replica_election_results == ()


@pytest.mark.parametrize("version", range(1, 7))
def test_delete_topics_is_answered_per_topic_at_every_version(version: int) -> None:
    import datetime
    import uuid

    from kio.static.primitive import i32Timedelta

    timeout = i32Timedelta.parse(datetime.timedelta(seconds=1))
    cls = request_class(ApiKey.DELETE_TOPICS, version)
    if version >= 6:
        from kio.schema.delete_topics.v6.request import DeleteTopicState

        topic_id = uuid.UUID(int=5)
        request = cls(topics=(DeleteTopicState(name="a", topic_id=uuid.UUID(int=0)),
                              DeleteTopicState(name=None, topic_id=topic_id)), timeout=timeout)
        expected = [("a", uuid.UUID(int=0)), (None, topic_id)]
    else:
        request = cls(topic_names=("a", "b"), timeout=timeout)
        expected = [("a", None), ("b", None)]
    response = error_response_for(request, ErrorCode.NOT_CONTROLLER, error_message="moved")
    assert [(r.name, getattr(r, "topic_id", None)) for r in response.responses] == expected
    assert {r.error_code for r in response.responses} == {ErrorCode.NOT_CONTROLLER}
    encode_response(1, response)
