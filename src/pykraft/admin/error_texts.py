"""Kafka's words for the error codes the operator tools print: each code's exception class (as Kafka's tools
print a failed future: `org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.`) and its
default message from Kafka's `Errors` table. A code without an entry prints as its name."""

from __future__ import annotations

from pykraft.protocol.errors import ErrorCode

__all__ = ["exception_text", "message_of"]

PACKAGE = "org.apache.kafka.common.errors."

_TEXTS: dict[ErrorCode, tuple[str, str]] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: ("UnknownServerException",
                                     "The server experienced an unexpected error when processing the request."),
    ErrorCode.OFFSET_OUT_OF_RANGE: ("OffsetOutOfRangeException",
                                    "The requested offset is not within the range of offsets maintained by the server."),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ("UnknownTopicOrPartitionException",
                                           "This server does not host this topic-partition."),
    ErrorCode.LEADER_NOT_AVAILABLE: ("LeaderNotAvailableException",
                                     "There is no leader for this topic-partition as we are in the middle of a "
                                     "leadership election."),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ("NotLeaderOrFollowerException",
                                       "For requests intended only for the leader, this error indicates that the "
                                       "broker is not the current leader. For requests intended for any replica, this "
                                       "error indicates that the broker is not a replica of the topic partition."),
    ErrorCode.REQUEST_TIMED_OUT: ("TimeoutException", "The request timed out."),
    ErrorCode.MESSAGE_TOO_LARGE: ("RecordTooLargeException",
                                  "The request included a message larger than the max message size the server will "
                                  "accept."),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ("CoordinatorNotAvailableException", "The coordinator is not available."),
    ErrorCode.NOT_COORDINATOR: ("NotCoordinatorException", "This is not the correct coordinator."),
    ErrorCode.INVALID_TOPIC_EXCEPTION: ("InvalidTopicException",
                                        "The request attempted to perform an operation on an invalid topic."),
    ErrorCode.RECORD_LIST_TOO_LARGE: ("RecordBatchTooLargeException",
                                      "The request included message batch larger than the configured segment size on "
                                      "the server."),
    ErrorCode.NOT_ENOUGH_REPLICAS: ("NotEnoughReplicasException",
                                    "Messages are rejected since there are fewer in-sync replicas than required."),
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ("NotEnoughReplicasAfterAppendException",
                                                 "Messages are written to the log, but to fewer in-sync replicas than "
                                                 "required."),
    ErrorCode.INVALID_REQUIRED_ACKS: ("InvalidRequiredAcksException",
                                      "Produce request specified an invalid value for required acks."),
    ErrorCode.ILLEGAL_GENERATION: ("IllegalGenerationException", "Specified group generation id is not valid."),
    ErrorCode.INVALID_GROUP_ID: ("InvalidGroupIdException", "The configured groupId is invalid."),
    ErrorCode.UNKNOWN_MEMBER_ID: ("UnknownMemberIdException", "The coordinator is not aware of this member."),
    ErrorCode.REBALANCE_IN_PROGRESS: ("RebalanceInProgressException",
                                      "The group is rebalancing, so a rejoin is needed."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: ("TopicAuthorizationException", "Topic authorization failed."),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: ("GroupAuthorizationException", "Group authorization failed."),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: ("ClusterAuthorizationException", "Cluster authorization failed."),
    ErrorCode.INVALID_TIMESTAMP: ("InvalidTimestampException",
                                  "The timestamp of the message is out of acceptable range."),
    ErrorCode.UNSUPPORTED_VERSION: ("UnsupportedVersionException", "The version of API is not supported."),
    ErrorCode.INVALID_REQUEST: ("InvalidRequestException",
                                "This most likely occurs because of a request being malformed by the client library "
                                "or the message was sent to an incompatible broker. See the broker logs for more "
                                "details."),
    ErrorCode.NOT_CONTROLLER: ("NotControllerException", "This is not the correct controller for this cluster."),
    ErrorCode.NON_EMPTY_GROUP: ("GroupNotEmptyException", "The group is not empty."),
    ErrorCode.GROUP_ID_NOT_FOUND: ("GroupIdNotFoundException", "The group id does not exist."),
    ErrorCode.FENCED_LEADER_EPOCH: ("FencedLeaderEpochException",
                                    "The leader epoch in the request is older than the epoch on the broker."),
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: ("PreferredLeaderNotAvailableException",
                                               "The preferred leader was not available."),
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: ("GroupSubscribedToTopicException",
                                          "The consumer group is actively subscribed to the topic"),
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: ("EligibleLeadersNotAvailableException",
                                               "Eligible topic partition leaders are not available."),
    ErrorCode.ELECTION_NOT_NEEDED: ("ElectionNotNeededException", "Leader election not needed for topic partition."),
    ErrorCode.BROKER_ID_NOT_REGISTERED: ("BrokerIdNotRegisteredException", "The given broker ID was not registered."),
    ErrorCode.UNKNOWN_TOPIC_ID: ("UnknownTopicIdException", "This server does not host this topic ID."),
}


def message_of(code: ErrorCode) -> str:
    """Kafka's default message for `code` (its name when we have none)."""
    found = _TEXTS.get(code)
    return found[1] if found else code.name


def exception_text(code: ErrorCode, message: str | None = None) -> str:
    """`org.apache.kafka.common.errors.XException: message`, as a failed Kafka future prints."""
    found = _TEXTS.get(code)
    if found is None:
        return f"{code.name}: {message}" if message else code.name
    return f"{PACKAGE}{found[0]}: {message or found[1]}"
