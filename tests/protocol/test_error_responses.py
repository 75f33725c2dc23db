"""error_response_for: a top-level error response for any registered request type."""

from __future__ import annotations

import dataclasses

import pytest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest
from kio.schema.vote.v2.request import VoteRequest

from pykraft.protocol.apis import ApiKey, response_class
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
