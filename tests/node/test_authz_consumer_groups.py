"""KIP-848's authorization as Kafka's KafkaApis checks it: ConsumerGroupHeartbeat needs READ on the group and
DESCRIBE on every subscribed topic named; ConsumerGroupDescribe needs DESCRIBE per group and hides a group whose
assignments name a topic the principal may not describe."""

from __future__ import annotations

import importlib

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.node.runtime.authz import Denied, Narrowed
from pykraft.protocol.apis import response_class
from pykraft.protocol.errors import ErrorCode

from node.test_authz_txn import TOPIC_ID, allow, authorizer, decoded

OTHER_ID = importlib.import_module("uuid").UUID(int=8)


def heartbeat(**fields):
    base = dict(group_id="g", member_id="m", member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout=1000,
                subscribed_topic_names=("orders",), subscribed_topic_regex=None, server_assignor=None,
                topic_partitions=())
    return decoded(68, 1, **{**base, **fields})


def error_of(check) -> ErrorCode:
    assert isinstance(check, Denied)
    return ErrorCode(check.response.error_code)


def test_heartbeat_needs_read_on_the_group_first():
    assert error_of(authorizer(allow(Res.TOPIC, "orders", Op.READ)).check(heartbeat(), False)) == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert error_of(authorizer(allow(Res.GROUP, "g", Op.DESCRIBE)).check(heartbeat(), False)) == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_heartbeat_refused_whole_when_one_subscribed_topic_is_not_describable():
    auth = authorizer(allow(Res.GROUP, "g", Op.READ), allow(Res.TOPIC, "orders", Op.READ))
    assert auth.check(heartbeat(), False) is None
    both = heartbeat(subscribed_topic_names=("orders", "audit"))
    assert error_of(auth.check(both, False)) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    wider = authorizer(allow(Res.GROUP, "g", Op.READ), allow(Res.TOPIC, "orders", Op.READ),
                       allow(Res.TOPIC, "audit", Op.DESCRIBE))
    assert wider.check(both, False) is None


def test_heartbeat_without_names_needs_only_the_group():
    auth = authorizer(allow(Res.GROUP, "g", Op.READ))
    assert auth.check(heartbeat(subscribed_topic_names=None, subscribed_topic_regex="ord.*"), False) is None
    assert auth.check(heartbeat(subscribed_topic_names=(), member_epoch=-1), False) is None


def described_group(ns, group_id: str, *topics: tuple[str, object]):
    assignment = ns.Assignment(topic_partitions=tuple(ns.TopicPartitions(topic_id=i, topic_name=n, partitions=(0,))
                                                      for n, i in topics))
    member = ns.Member(member_id="m", instance_id=None, rack_id=None, member_epoch=3, client_id="c",
                       client_host="/10.0.0.1", subscribed_topic_names=tuple(n for n, _ in topics),
                       subscribed_topic_regex=None, assignment=assignment, target_assignment=ns.Assignment(
                           topic_partitions=()), member_type=1)
    return ns.DescribedGroup(error_code=ErrorCode.NONE, error_message=None, group_id=group_id, group_state="Stable",
                             group_epoch=3, assignment_epoch=3, assignor_name="uniform", members=(member,),
                             authorized_operations=-2147483648)


def test_describe_refuses_groups_and_hides_assignments_of_undescribable_topics():
    ns = importlib.import_module(response_class(69, 1).__module__)
    auth = authorizer(allow(Res.GROUP, "g", Op.DESCRIBE), allow(Res.GROUP, "k", Op.DESCRIBE),
                      allow(Res.TOPIC, "orders", Op.DESCRIBE))
    check = auth.check(decoded(69, 1, group_ids=("g", "h", "k"), include_authorized_operations=True), False)
    assert isinstance(check, Narrowed) and check.request.group_ids == ("g", "k")
    answer = check.finish(response_class(69, 1)(throttle_time=0, groups=(
        described_group(ns, "g", ("orders", TOPIC_ID)), described_group(ns, "k", ("orders", TOPIC_ID),
                                                                        ("audit", OTHER_ID)))))
    by_id = {g.group_id: g for g in answer.groups}
    assert ErrorCode(by_id["h"].error_code) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert ErrorCode(by_id["k"].error_code) == ErrorCode.TOPIC_AUTHORIZATION_FAILED and by_id["k"].members == ()
    assert ErrorCode(by_id["g"].error_code) == ErrorCode.NONE and len(by_id["g"].members) == 1
    assert by_id["g"].authorized_operations == 1 << int(Op.DESCRIBE)


def test_describe_of_no_allowed_group_never_reaches_the_coordinator():
    check = authorizer().check(decoded(69, 0, group_ids=("g",), include_authorized_operations=False), False)
    assert isinstance(check, Narrowed) and check.request is None
    assert [ErrorCode(g.error_code) for g in check.finish(None).groups] == [ErrorCode.GROUP_AUTHORIZATION_FAILED]
