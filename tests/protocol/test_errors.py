"""ErrorCode: Kafka's numbers, consistency with kio, and use inside kio messages; the exception tree."""

from __future__ import annotations

import io

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.vote.v2 import response as vote_response
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from pykraft.protocol.errors import (
    ErrorCode,
    FrameTooLargeError,
    InvalidFrameError,
    MalformedRequestError,
    MalformedResponseError,
    MessageError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)

# The table of reference §2.3 (codes KRaft and the controller use), written out independently of kio.
REFERENCE_CODES = {
    "UNKNOWN_SERVER_ERROR": -1, "NONE": 0, "OFFSET_OUT_OF_RANGE": 1, "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "NOT_LEADER_OR_FOLLOWER": 6, "REQUEST_TIMED_OUT": 7, "BROKER_NOT_AVAILABLE": 8,
    "CLUSTER_AUTHORIZATION_FAILED": 31, "UNSUPPORTED_VERSION": 35, "NOT_CONTROLLER": 41, "INVALID_REQUEST": 42,
    "OPERATION_NOT_ATTEMPTED": 55, "FENCED_LEADER_EPOCH": 74, "UNKNOWN_LEADER_EPOCH": 75,
    "STALE_BROKER_EPOCH": 77, "INCONSISTENT_VOTER_SET": 94, "INVALID_UPDATE_VERSION": 95,
    "FEATURE_UPDATE_FAILED": 96, "SNAPSHOT_NOT_FOUND": 98, "POSITION_OUT_OF_RANGE": 99, "UNKNOWN_TOPIC_ID": 100,
    "DUPLICATE_BROKER_REGISTRATION": 101, "BROKER_ID_NOT_REGISTERED": 102, "INCONSISTENT_CLUSTER_ID": 104,
    "INELIGIBLE_REPLICA": 107, "NEW_LEADER_ELECTED": 108, "INVALID_REGISTRATION": 119, "INVALID_VOTER_KEY": 125,
    "DUPLICATE_VOTER": 126, "VOTER_NOT_FOUND": 127,
    # Others a node returns: corrupt or invalid data, network failures synthesised by the client side.
    "CORRUPT_MESSAGE": 2, "NETWORK_EXCEPTION": 13, "INVALID_RECORD": 87, "UNKNOWN_MEMBER_ID": 25,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFERENCE_CODES))
def test_reference_codes_have_kafkas_names_and_numbers(name: str) -> None:
    assert ErrorCode[name] == REFERENCE_CODES[name]


def test_every_member_equals_kios_member_of_the_same_name() -> None:
    for member in ErrorCode:
        assert int(KioErrorCode[member.name.lower()]) == int(member), member


def test_every_kio_member_has_a_member_here() -> None:
    # So any code kio can decode from a peer converts without error.
    ours = {member.name for member in ErrorCode}
    missing = [kio_member.name for kio_member in KioErrorCode if kio_member.name.upper() not in ours]
    assert missing == []


def test_there_is_no_invalid_cluster_id_code() -> None:
    # Reference §2.3: the wire error is INCONSISTENT_CLUSTER_ID; InvalidClusterId is client-side only.
    assert "INVALID_CLUSTER_ID" not in ErrorCode.__members__


@pytest.mark.parametrize("member", list(ErrorCode))
def test_conversions_round_trip(member: ErrorCode) -> None:
    kio_member = member.to_kio()
    assert isinstance(kio_member, KioErrorCode)
    assert ErrorCode.from_kio(kio_member) is member
    assert ErrorCode.of(int(member)) is member
    assert member == kio_member and hash(member) == hash(kio_member)
    assert member.retriable == kio_member.retriable


def test_of_rejects_numbers_kafka_does_not_define() -> None:
    with pytest.raises(ValueError):
        ErrorCode.of(9999)


def test_retriable_follows_kafka() -> None:
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable
    assert ErrorCode.REQUEST_TIMED_OUT.retriable
    assert not ErrorCode.INVALID_REQUEST.retriable
    assert not ErrorCode.INCONSISTENT_CLUSTER_ID.retriable


def test_members_work_inside_kio_messages() -> None:
    message = vote_response.VoteResponse(
        error_code=ErrorCode.FENCED_LEADER_EPOCH,
        topics=(
            vote_response.TopicData(
                topic_name="__cluster_metadata",
                partitions=(
                    vote_response.PartitionData(
                        partition_index=i32(0),
                        error_code=ErrorCode.NONE,
                        leader_id=i32(1),
                        leader_epoch=i32(5),
                        vote_granted=False,
                    ),
                ),
            ),
        ),
    )
    buffer = io.BytesIO()
    entity_writer(vote_response.VoteResponse)(buffer, message)
    decoded, _ = entity_reader(vote_response.VoteResponse)(buffer.getvalue(), 0)
    assert decoded.error_code is KioErrorCode.fenced_leader_epoch
    assert decoded.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert ErrorCode.from_kio(decoded.topics[0].partitions[0].error_code) is ErrorCode.NONE
    assert decoded == message  # equality holds across the two enums


def test_exception_tree() -> None:
    for cls in (InvalidFrameError, FrameTooLargeError, MessageError, MalformedRequestError,
                MalformedResponseError, UnsupportedVersionError, UnknownApiKeyError):  # fmt: skip
        assert issubclass(cls, ProtocolError)
    assert issubclass(FrameTooLargeError, InvalidFrameError)
    assert issubclass(UnknownApiKeyError, UnsupportedVersionError)


def test_message_errors_carry_and_print_their_ids() -> None:
    error = MalformedRequestError("bad body", api_key=52, api_version=2, correlation_id=9)
    assert (error.api_key, error.api_version, error.correlation_id) == (52, 2, 9)
    assert "api_key=52" in str(error) and "correlation_id=9" in str(error) and "bad body" in str(error)
    assert MalformedRequestError("short").correlation_id is None
