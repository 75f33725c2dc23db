"""A ConsumerGroupHeartbeat as the pure coordinator takes it, its answer, and Kafka's checks of it before anything
changes (GroupMetadataManager's throwIf... family): malformed requests, unknown assignors, invalid regular
expressions, member epochs behind or ahead of the coordinator's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.broker.consumer_group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerMember, FencedMember, Partitions
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec

Record = tuple[rec.ConsumerGroupKey, "rec.ConsumerGroupValue | None"]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Partitions | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 0
    # With an authorizer, whether this member's principal may DESCRIBE a topic: Kafka (KAFKA-18813) keeps a regex's
    # resolution to the topics the member whose heartbeat resolves it may describe. None: every topic.
    topic_visible: Callable[[str], bool] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None
    records: tuple[Record, ...] = ()


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def validate(r: HeartbeatRequest, known_assignors: tuple[str, ...]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid: HeartbeatError with Kafka's error and message."""
    def invalid(message: str) -> HeartbeatError:
        return HeartbeatError(ErrorCode.INVALID_REQUEST, message)
    for value, name in ((r.group_id, "GroupId"), (r.instance_id, "InstanceId"), (r.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise invalid(f"{name} can't be empty.")
    # KIP-1082 (v1): the member chooses its id; v0 lets the coordinator choose it at the first join.
    if (r.version >= 1 or r.member_epoch > 0 or r.member_epoch == LEAVE_EPOCH) and not r.member_id.strip():
        raise invalid("MemberId can't be empty.")
    if r.member_epoch == 0:
        if r.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if r.owned is None or r.owned:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if not r.subscribed_topic_names and not r.subscribed_topic_regex:
            raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request." if
                          r.version >= 1 else "SubscribedTopicNames must be set in first request.")
    elif r.member_epoch == STATIC_LEAVE_EPOCH:
        if not r.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if r.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif r.member_epoch < LEAVE_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if r.server_assignor is not None and r.server_assignor not in known_assignors:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {r.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(known_assignors)}.")
    if r.subscribed_topic_regex is not None:
        try:
            re.compile(r.subscribed_topic_regex)
        except re.error as exc:
            raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                 f"SubscribedTopicRegex `{r.subscribed_topic_regex}` is not a valid regular "
                                 f"expression: {exc}.") from None


def check_epoch(member: ConsumerMember, received: int, owned: Partitions | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: ahead is fenced; behind only by the epoch whose answer
    may have been lost, still owning nothing outside the current assignment, is accepted."""
    if received > member.member_epoch:
        raise FencedMember(f"The consumer group member has a greater member epoch ({received}) than the one known "
                           f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                           f"partitions and rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch
                                          or not _subset(owned, member.assigned)):
        raise FencedMember(f"The consumer group member has a smaller member epoch ({received}) than the one known "
                           f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                           f"partitions and rejoin.")


def _subset(owned: Partitions | None, target: Partitions) -> bool:
    if owned is None:
        return False
    return all(topic_id in target and numbers <= target[topic_id] for topic_id, numbers in owned.items())
