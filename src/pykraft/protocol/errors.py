"""Kafka error codes and the exceptions raised for framing and decoding problems.

`ErrorCode` lists every code of Kafka's `Errors` table (as of Kafka 4.1/4.2, the schemas kio is generated
from) under Kafka's own UPPER_CASE names. It is an `IntEnum`, so a member can be passed wherever kio
expects `kio.schema.errors.ErrorCode`: kio's writer only calls `.value` and packs it as an int16, and
members of both enums compare and hash equal by number. Reading gives kio's enum back; `ErrorCode.of`
converts either kind (or a bare int) to ours.

The exceptions form one tree under `ProtocolError`, so a connection handler needs a single `except`
to turn any bad input from a peer into a closed connection or an error response.
"""

from __future__ import annotations

import enum
from typing import cast

from kio.schema.errors import ErrorCode as KioErrorCode

__all__ = [
    "ErrorCode",
    "kio_code",
    "FrameTooLargeError",
    "InvalidFrameError",
    "MalformedRequestError",
    "MalformedResponseError",
    "MessageError",
    "ProtocolError",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
]


class ErrorCode(enum.IntEnum):
    """Kafka's wire error codes. The ones KRaft and the controller use are listed in the reference, §2.3."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        """Our member for a kio member or a bare number. Raises ValueError for a number Kafka does not define."""
        return cls(int(code))

    @classmethod
    def from_kio(cls, code: KioErrorCode) -> ErrorCode:
        return cls(int(code))

    def to_kio(self) -> KioErrorCode:
        # kio's members are named like ours in lower case; looking up by number keeps the two in step
        # even if a name ever differs (the consistency test checks that none does).
        return KioErrorCode(int(self))

    @property
    def retriable(self) -> bool:
        """Whether Kafka marks this error retriable (a `RetriableException` on the Java side)."""
        return bool(self.to_kio().retriable)


def kio_code(code: int) -> KioErrorCode:
    """`code` (ours, kio's or a number) where kio types a field with its own enum: the same object, no conversion
    (kio's writer reads only the number, see above), so a reader comparing with our members still finds them."""
    return cast(KioErrorCode, code)


class ProtocolError(Exception):
    """Base of every error this package raises for bad bytes from a peer."""


class InvalidFrameError(ProtocolError):
    """The 4-byte size prefix is impossible (negative). The stream cannot be resynchronised: close it."""

    def __init__(self, message: str, *, size: int) -> None:
        super().__init__(message)
        self.size = size


class FrameTooLargeError(InvalidFrameError):
    """The size prefix announces more than the configured maximum; raised before any of the body is buffered."""

    def __init__(self, message: str, *, size: int, limit: int) -> None:
        super().__init__(message, size=size)
        self.limit = limit


class MessageError(ProtocolError):
    """A frame whose header or body cannot be used. Carries whatever identifies the message so far.

    `api_key`, `api_version` and `correlation_id` are None when the frame was too short to hold them.
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id

    def __str__(self) -> str:
        ids = f"api_key={self.api_key} api_version={self.api_version} correlation_id={self.correlation_id}"
        return f"{self.args[0]} ({ids})"


class MalformedRequestError(MessageError):
    """A request whose header or body is truncated, has trailing bytes, or does not decode.

    Kafka answers this with an InvalidRequestException that closes the connection; callers do the same.
    """


class MalformedResponseError(MessageError):
    """A response (read on the client side) that is truncated, has trailing bytes, or does not decode."""


class UnsupportedVersionError(MessageError):
    """A request for an API version this node does not implement, and for which no error response of the
    request's own type can be encoded. Kafka closes the connection in this case; callers do the same.
    """


class UnknownApiKeyError(UnsupportedVersionError):
    """A request whose API key this node does not implement at all (Kafka: "Unknown API key", connection closed)."""
