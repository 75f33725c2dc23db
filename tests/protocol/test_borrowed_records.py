"""decode_request / decode_response with borrow_records: record batches as views of the frame, not kio's copies."""

from __future__ import annotations

import datetime
import importlib
import uuid

import pytest

from pykraft.protocol.apis import ApiKey, ApiRegistry, VersionRange
from pykraft.protocol.codec import decode_request, decode_response, encode_request, encode_response
from pykraft.protocol.errors import ErrorCode, MalformedRequestError

REGISTRY = ApiRegistry(((ApiKey.PRODUCE, VersionRange(3, 12)),))


def _produce(version: int, partitions: list[bytes | None]) -> bytearray:
    ns = importlib.import_module(f"kio.schema.produce.v{version}.request")
    data = tuple(ns.PartitionProduceData(index=i, records=r) for i, r in enumerate(partitions))
    request = ns.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5),
                                topic_data=(ns.TopicProduceData(name="t", partition_data=data[:2]),
                                            ns.TopicProduceData(name="u", partition_data=data[2:])))
    return bytearray(encode_request(request, correlation_id=9, client_id="c")[4:])


@pytest.mark.parametrize("version", [3, 8, 9, 12])  # legacy (int32 lengths) and flexible (varint lengths)
def test_produce_records_are_writable_views_of_the_frame_in_wire_order(version: int) -> None:
    batches = [b"a" * 100, None, b"", b"d" * 70_000]
    frame = _produce(version, batches)
    message = decode_request(frame, REGISTRY, borrow_records=True).message
    records = [p.records for t in message.topic_data for p in t.partition_data]
    assert [None if r is None else bytes(r) for r in records] == batches
    big = records[3]
    assert isinstance(big, memoryview) and not big.readonly and big.obj is frame
    big[0:1] = b"Z"  # a view, not a copy: the leader patches the header in place
    assert frame.count(b"Z" + b"d" * 69_999) == 1
    assert message.topic_data[0].name == "t" and [p.index for p in message.topic_data[1].partition_data] == [2, 3]


def test_without_borrowing_records_are_kio_copies() -> None:
    frame = _produce(9, [b"a" * 100, None, b"c", b"d"])
    message = decode_request(frame, REGISTRY).message
    assert type(message.topic_data[0].partition_data[0].records) is bytes


def test_a_read_only_frame_gives_read_only_views() -> None:
    frame = bytes(_produce(9, [b"a" * 100, None, b"c", b"d"]))
    records = decode_request(frame, REGISTRY, borrow_records=True).message.topic_data[0].partition_data[0].records
    assert records.readonly and bytes(records) == b"a" * 100


def test_a_malformed_frame_is_still_refused_when_borrowing() -> None:
    frame = _produce(9, [b"a" * 100, None, b"c", b"d"])
    with pytest.raises(MalformedRequestError):
        decode_request(frame[:-10], REGISTRY, borrow_records=True)


def test_fetch_answer_records_are_views_of_the_response_frame() -> None:
    from kio.schema.fetch.v17 import response as fetch

    topic_id = uuid.uuid4()
    parts = tuple(fetch.PartitionData(partition_index=i, error_code=ErrorCode.NONE, high_watermark=5,
                                      last_stable_offset=5, log_start_offset=0, aborted_transactions=(),
                                      preferred_read_replica=-1, records=r)
                  for i, r in enumerate([b"x" * 50_000, None, b"yz"]))
    answer = fetch.FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE, session_id=0,
                                 responses=(fetch.FetchableTopicResponse(topic_id=topic_id, partitions=parts),))
    frame = bytearray(encode_response(4, answer)[4:])
    decoded = decode_response(frame, ApiKey.FETCH, 17, borrow_records=True).message
    got = [p.records for p in decoded.responses[0].partitions]
    assert bytes(got[0]) == b"x" * 50_000 and got[0].obj is frame and got[1] is None and bytes(got[2]) == b"yz"
    assert decoded.responses[0].partitions[2].high_watermark == 5 and decoded.responses[0].topic_id == topic_id
