"""Cross-checks against an independent codec: kafka-python 3.0.12's protocol classes.

kafka-python generates its classes from Kafka's JSON schemas with its own encoder and header logic
(including the ApiVersions quirks), so agreement here is evidence about the bytes, not about kio.
"""

from __future__ import annotations

import pytest
from kafka.protocol.admin import DescribeQuorumRequest, DescribeQuorumResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kio.schema.describe_quorum.v2 import response as dq_response
from kio.static.primitive import i32, i64

from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey, VersionRange
from pykraft.protocol.codec import (
    DecodedRequest,
    RequestDecodeFailure,
    decode_request,
    decode_response,
    encode_response,
)
from pykraft.protocol.errors import ErrorCode

from .helpers import unframe

SUPPORTED = {"kraft.version": VersionRange(0, 1), "metadata.version": VersionRange(7, 27)}


def kp_api_versions_request(version: int) -> bytes:
    if version >= 3:
        request = ApiVersionsRequest(version=version, client_software_name="kafka-python",
                                     client_software_version="3.0.12")  # fmt: skip
    else:
        request = ApiVersionsRequest(version=version)
    request.with_header(correlation_id=1000 + version, client_id="kafka-python-client")
    return bytes(request.encode(header=True, framed=True))


@pytest.mark.parametrize("version", range(5))
def test_kafka_python_api_versions_request_decodes(version: int) -> None:
    frame = unframe(kp_api_versions_request(version))
    decoded = decode_request(frame, KRAFT_NODE_APIS)
    assert isinstance(decoded, DecodedRequest)
    assert (decoded.api_key, decoded.api_version) == (ApiKey.API_VERSIONS, version)
    assert (decoded.correlation_id, decoded.client_id) == (1000 + version, "kafka-python-client")
    if version >= 3:
        assert decoded.message.client_software_name == "kafka-python"
        assert decoded.message.client_software_version == "3.0.12"


@pytest.mark.parametrize("version", range(3))
def test_kafka_python_describe_quorum_request_decodes(version: int) -> None:
    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(
        version=version,
        topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])],
    )
    request.with_header(correlation_id=77, client_id="admin")
    frame = unframe(bytes(request.encode(header=True, framed=True)))
    decoded = decode_request(frame, KRAFT_NODE_APIS)
    assert isinstance(decoded, DecodedRequest)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (ApiKey.DESCRIBE_QUORUM, version, 77)
    (only_topic,) = decoded.message.topics
    assert only_topic.topic_name == "__cluster_metadata"
    assert [p.partition_index for p in only_topic.partitions] == [0]


@pytest.mark.parametrize("version", range(5))
def test_pykraft_api_versions_response_parses_in_kafka_python(version: int) -> None:
    response = api_versions_response(KRAFT_NODE_APIS, version, supported_features=SUPPORTED,
                                     finalized_features={"metadata.version": 27}, finalized_features_epoch=9,
                                     throttle_time_ms=3)  # fmt: skip
    parsed = ApiVersionsResponse.decode(encode_response(555, response), version=version, header=True, framed=True)
    assert parsed.header.correlation_id == 555
    assert parsed.error_code == 0
    assert {(k.api_key, k.min_version, k.max_version) for k in parsed.api_keys} == {
        (int(key), r.min_version, r.max_version) for key, r in KRAFT_NODE_APIS
    }
    if version >= 1:
        assert parsed.throttle_time_ms == 3
    if version >= 3:
        expected = {("metadata.version", 7, 27)} | ({("kraft.version", 0, 1)} if version >= 4 else set())
        assert {(f.name, f.min_version, f.max_version) for f in parsed.supported_features} == expected
        assert [(f.name, f.max_version_level) for f in parsed.finalized_features] == [("metadata.version", 27)]
        assert parsed.finalized_features_epoch == 9


def test_kafka_python_reads_our_unsupported_version_answer_and_picks_our_max() -> None:
    # kafka-python 3.0.12 knows ApiVersions up to v4; pretend it tried a node that only knows 0-2.
    registry = KRAFT_NODE_APIS.with_range(ApiKey.API_VERSIONS, 0, 2)
    frame = unframe(kp_api_versions_request(4))
    failure = decode_request(frame, registry)
    assert isinstance(failure, RequestDecodeFailure)
    parsed = ApiVersionsResponse.decode(failure.response, version=4, header=True, framed=True)
    assert parsed.header.correlation_id == 1004
    assert parsed.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.max_version) for k in parsed.api_keys] == [(18, 2)]  # what its retry loop reads


@pytest.mark.parametrize("version", range(5))
def test_kafka_python_api_versions_response_decodes_in_pykraft(version: int) -> None:
    entry = ApiVersionsResponse.ApiVersion
    fields = {"error_code": 0, "api_keys": [entry(api_key=18, min_version=0, max_version=4),
                                            entry(api_key=55, min_version=0, max_version=2)]}  # fmt: skip
    if version >= 1:
        fields["throttle_time_ms"] = 0
    kp = ApiVersionsResponse(version=version, **fields)
    kp.with_header(correlation_id=31)
    decoded = decode_response(unframe(bytes(kp.encode(header=True, framed=True))), ApiKey.API_VERSIONS, version)
    assert decoded.correlation_id == 31 and decoded.api_version == version
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.message.api_keys] == [(18, 0, 4), (55, 0, 2)]


def test_pykraft_describe_quorum_response_parses_in_kafka_python() -> None:
    replica = dq_response.ReplicaState(replica_id=i32(1), replica_directory_id=None, log_end_offset=i64(50),
                                       last_fetch_timestamp=i64(1_700_000_000_000),
                                       last_caught_up_timestamp=i64(1_700_000_000_000))  # fmt: skip
    partition = dq_response.PartitionData(partition_index=i32(0), error_code=ErrorCode.NONE, error_message=None,
                                          leader_id=i32(1), leader_epoch=i32(4), high_watermark=i64(50),
                                          current_voters=(replica,), observers=())  # fmt: skip
    response = dq_response.DescribeQuorumResponse(
        error_code=ErrorCode.NONE, error_message=None,
        topics=(dq_response.TopicData(topic_name="__cluster_metadata", partitions=(partition,)),),
        nodes=(dq_response.Node(node_id=i32(1), listeners=(
            dq_response.Listener(name="CONTROLLER", host="127.0.0.1", port=9093),)),),
    )  # fmt: skip
    parsed = DescribeQuorumResponse.decode(encode_response(8, response), version=2, header=True, framed=True)
    assert parsed.header.correlation_id == 8
    (kp_partition,) = parsed.topics[0].partitions
    assert (kp_partition.leader_id, kp_partition.leader_epoch, kp_partition.high_watermark) == (1, 4, 50)
    assert [v.replica_id for v in kp_partition.current_voters] == [1]
    assert parsed.nodes[0].listeners[0].port == 9093
