"""produce_answer.py against kio: the direct Produce v9 answer is kio's bytes exactly, or None (kio encodes it)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.produce.v9 import request as produce_req
from kio.schema.produce.v9 import response as produce_resp
from kio.serial.readers import tz_aware_from_i64

from pykraft.protocol import produce_answer
from pykraft.protocol.codec import encode_response_body
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC

from tests.protocol.schema_strategies import message

INT32 = st.integers(-(2**31), 2**31 - 1)


def _kio(correlation_id: int, response: object) -> bytes | type[BaseException]:
    try:
        return bytes(encode_response_body(correlation_id, response))
    except Exception as exc:  # the verdict compared
        return type(exc)


def _assert_like_kio(correlation_id: int, response: object) -> bytes | None:
    direct = produce_answer.encode_response_body(correlation_id, response)
    if direct is not None:
        assert direct == _kio(correlation_id, response)
    return direct


def _answer(**changes: object) -> produce_resp.ProduceResponse:
    """What writes.produce answers for one committed write."""
    partition = produce_resp.PartitionProduceResponse(index=0, error_code=ErrorCode.NONE, base_offset=1234,
                                                      record_errors=(), error_message=None)
    partition = dataclasses.replace(partition, **changes)
    topic = produce_resp.TopicProduceResponse(name=METADATA_TOPIC, partition_responses=(partition,))
    return produce_resp.ProduceResponse(responses=(topic,))


@settings(max_examples=300, deadline=None)
@given(INT32, st.sampled_from(list(ErrorCode)), st.integers(-(2**63), 2**63 - 1),
       st.one_of(st.none(), st.text(max_size=200)))
def test_the_answers_a_controller_gives_are_encoded_directly_and_exactly(correlation_id, error, base, text):
    assert _assert_like_kio(correlation_id, _answer(error_code=error, base_offset=base, error_message=text))


@settings(max_examples=400, deadline=None)
@given(message(produce_resp.ProduceResponse), INT32)
def test_any_answer_is_kios_bytes_or_left_to_kio(response, correlation_id):
    _assert_like_kio(correlation_id, response)


@pytest.mark.parametrize("response", [
    _answer(record_errors=(produce_resp.BatchIndexAndErrorMessage(batch_index=0, batch_index_error_message="x"),)),
    _answer(log_append_time=tz_aware_from_i64(5)),
    _answer(base_offset=2**63),
    produce_req.ProduceRequest(transactional_id=None, acks=-1, timeout=1000, topic_data=()),
], ids=["record-errors", "log-append-time", "int64-overflow", "not-an-answer"])
def test_other_shapes_are_left_to_kio(response):
    assert produce_answer.encode_response_body(1, response) is None
