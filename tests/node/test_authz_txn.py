"""The transaction APIs' authorization (node/runtime/authz_txn.py) against Kafka's KafkaApis rules: which requests go to
the handler, which are answered with which error where."""

from __future__ import annotations

import importlib
import uuid

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import AclPermissionType as Perm
from pykraft.controller.acl_model import PatternType as Pat
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.controller.acl_model import StandardAcl, acl_to_record
from pykraft.controller.authorizer import AuthorizerSettings
from pykraft.net.server import ConnectionInfo
from pykraft.node.runtime.authz import Denied, Narrowed, RequestAuthorizer
from pykraft.node.runtime.authz_rules import RULES, UNLISTED
from pykraft.protocol import headers
from pykraft.protocol.apis import request_class, response_class
from pykraft.protocol.codec import DecodedRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.principal import KafkaPrincipal
from pykraft.records.metadata.schema.partition_record import PartitionRecordV0
from pykraft.records.metadata.schema.topic_record import TopicRecordV0

ALICE = ConnectionInfo("10.0.0.1", 5000, 1, None, "L", KafkaPrincipal("User", "alice"))
TOPIC_ID = uuid.UUID(int=7)


def allow(resource: Res, name: str, operation: Op, pattern: Pat = Pat.LITERAL) -> StandardAcl:
    return StandardAcl(resource, name, pattern, "User:alice", "*", operation, Perm.ALLOW)


def authorizer(*acls: StandardAcl) -> RequestAuthorizer:
    cache = MetadataCache()
    cache.replay(TopicRecordV0(name="orders", topic_id=TOPIC_ID), 0)
    cache.replay(TopicRecordV0(name="audit", topic_id=uuid.UUID(int=8)), 0)
    for topic_id in (TOPIC_ID, uuid.UUID(int=8)):
        cache.replay(PartitionRecordV0(partition_id=0, topic_id=topic_id, replicas=(1,), isr=(1,), leader=1,
                                       leader_epoch=0, partition_epoch=0), 0)
    for acl in acls:
        cache.replay(acl_to_record(uuid.uuid4(), acl), 1)
    return RequestAuthorizer(True, AuthorizerSettings(), lambda: cache, rules=RULES, unlisted=UNLISTED)


def decoded(key: int, version: int, **fields) -> DecodedRequest:
    message = request_class(key, version)(**fields)
    return DecodedRequest(header=headers.make_request_header(key, version, 1, "t"), message=message, context=ALICE)


def add_partitions_v3(*topics: tuple[str, tuple[int, ...]]) -> DecodedRequest:
    topic_type = importlib.import_module(request_class(24, 3).__module__).AddPartitionsToTxnTopic
    return decoded(24, 3, v3_and_below_transactional_id="tx", v3_and_below_producer_id=5,
                   v3_and_below_producer_epoch=0,
                   v3_and_below_topics=tuple(topic_type(name=n, partitions=p) for n, p in topics))


def partition_errors(answer) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition_index): ErrorCode(p.partition_error_code)
            for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}


def test_add_partitions_needs_write_on_the_transactional_id():
    check = authorizer(allow(Res.TOPIC, "orders", Op.WRITE)).check(add_partitions_v3(("orders", (0,))), False)
    assert isinstance(check, Denied)
    assert partition_errors(check.response) == {("orders", 0): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


def test_add_partitions_one_refused_topic_fails_the_whole_transaction():
    auth = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE), allow(Res.TOPIC, "orders", Op.WRITE),
                      allow(Res.TOPIC, "missing", Op.WRITE))
    check = auth.check(add_partitions_v3(("orders", (0, 9)), ("audit", (0,)), ("missing", (0,))), False)
    assert isinstance(check, Denied)
    assert partition_errors(check.response) == {
        ("orders", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("orders", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("audit", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED, ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_add_partitions_of_an_internal_topic_is_never_authorized():
    auth = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE), allow(Res.TOPIC, "*", Op.ALL))
    assert auth.check(add_partitions_v3(("orders", (0,))), False) is None
    check = auth.check(add_partitions_v3(("__consumer_offsets", (0,))), False)
    assert isinstance(check, Denied)
    assert partition_errors(check.response) == {("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_add_partitions_from_a_broker_needs_cluster_action():
    request = decoded(24, 4, transactions=())
    check = authorizer(allow(Res.CLUSTER, "kafka-cluster", Op.ALTER)).check(request, False)
    assert isinstance(check, Denied) and check.response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert authorizer(allow(Res.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)).check(request, False) is None


def test_end_txn_and_add_offsets_check_the_transactional_id_then_the_group():
    end = decoded(26, 3, transactional_id="tx", producer_id=5, producer_epoch=0, committed=True)
    offsets = decoded(25, 3, transactional_id="tx", producer_id=5, producer_epoch=0, group_id="g")
    none = authorizer()
    assert none.check(end, False).response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert none.check(offsets, False).response.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    writer = authorizer(allow(Res.TRANSACTIONAL_ID, "t", Op.WRITE, Pat.PREFIXED))
    assert writer.check(end, False) is None
    assert writer.check(offsets, False).response.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    both = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE), allow(Res.GROUP, "g", Op.READ))
    assert both.check(offsets, False) is None


def test_txn_offset_commit_refuses_per_topic_after_the_id_and_the_group():
    ns = importlib.import_module(request_class(28, 3).__module__)
    topics = tuple(ns.TxnOffsetCommitRequestTopic(name=n, partitions=(ns.TxnOffsetCommitRequestPartition(
        partition_index=0, committed_offset=10, committed_leader_epoch=-1, committed_metadata=""),))
        for n in ("orders", "audit"))
    request = decoded(28, 3, transactional_id="tx", group_id="g", producer_id=5, producer_epoch=0, generation_id=-1,
                      member_id="", group_instance_id=None, topics=topics)

    def errors(answer):
        return {t.name: ErrorCode(p.error_code) for t in answer.topics for p in t.partitions}
    check = authorizer(allow(Res.GROUP, "g", Op.READ)).check(request, False)
    assert errors(check.response) == dict.fromkeys(("orders", "audit"), ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    check = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE)).check(request, False)
    assert errors(check.response) == dict.fromkeys(("orders", "audit"), ErrorCode.GROUP_AUTHORIZATION_FAILED)
    check = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.WRITE), allow(Res.GROUP, "g", Op.READ),
                       allow(Res.TOPIC, "orders", Op.READ)).check(request, False)
    assert isinstance(check, Narrowed) and [t.name for t in check.request.topics] == ["orders"]
    finished = check.finish(response_class(28, 3)(throttle_time=0, topics=()))
    assert errors(finished) == {"audit": ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_write_txn_markers_needs_alter_or_cluster_action_on_the_cluster():
    ns = importlib.import_module(request_class(27, 1).__module__)
    marker = ns.WritableTxnMarker(producer_id=5, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
                                  topics=(ns.WritableTxnMarkerTopic(name="orders", partition_indexes=(0, 1)),))
    request = decoded(27, 1, markers=(marker,))
    check = authorizer(allow(Res.TOPIC, "*", Op.ALL)).check(request, False)
    assert isinstance(check, Denied)
    assert [(m.producer_id, t.name, p.partition_index, p.error_code) for m in check.response.markers
            for t in m.topics for p in t.partitions] == [(5, "orders", 0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                                                         (5, "orders", 1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    for operation in (Op.ALTER, Op.CLUSTER_ACTION):
        assert authorizer(allow(Res.CLUSTER, "kafka-cluster", operation)).check(request, False) is None


def test_describe_and_list_transactions_show_only_describable_ids_and_topics():
    ns = importlib.import_module(response_class(65, 0).__module__)
    auth = authorizer(allow(Res.TRANSACTIONAL_ID, "tx", Op.DESCRIBE), allow(Res.TOPIC, "orders", Op.DESCRIBE))
    check = auth.check(decoded(65, 0, transactional_ids=("ty", "tx")), False)
    assert isinstance(check, Narrowed) and check.request.transactional_ids == ("tx",)
    state = ns.TransactionState(error_code=ErrorCode.NONE, transactional_id="tx", transaction_state="Ongoing",
                                transaction_timeout=60000, transaction_start_time=1, producer_id=5, producer_epoch=0,
                                topics=tuple(ns.TopicData(topic=n, partitions=(0,)) for n in ("orders", "audit")))
    answer = check.finish(response_class(65, 0)(throttle_time=0, transaction_states=(state,)))
    assert [(s.transactional_id, s.error_code, [t.topic for t in s.topics]) for s in answer.transaction_states] == [
        ("ty", ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, []), ("tx", ErrorCode.NONE, ["orders"])]

    listed = importlib.import_module(response_class(66, 1).__module__)
    check = auth.check(decoded(66, 1, state_filters=(), producer_id_filters=(), duration_filter=-1), False)
    everything = response_class(66, 1)(throttle_time=0, error_code=ErrorCode.NONE, unknown_state_filters=(),
                                       transaction_states=tuple(listed.TransactionState(
                                           transactional_id=i, producer_id=5, transaction_state="Ongoing")
                                           for i in ("tx", "ty")))
    assert [s.transactional_id for s in check.finish(everything).transaction_states] == ["tx"]
