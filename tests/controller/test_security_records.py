"""ACLs and SCRAM credentials as metadata (Kafka's AclControlManager, ScramControlManager, ScramImage): CreateAcls,
DeleteAcls and AlterUserScramCredentials on the active controller become records every replica replays, survive a
snapshot, and are answered with Kafka's checks and error codes."""

from __future__ import annotations

from kio.schema.alter_user_scram_credentials.v0 import request as alter_rq
from kio.schema.create_acls.v3 import request as create_rq
from kio.schema.delete_acls.v3 import request as delete_rq
from kio.schema.describe_acls.v3 import request as describe_rq
from kio.schema.describe_user_scram_credentials.v0 import request as describe_scram_rq
from kio.static.primitive import i8, i32

from pykraft.controller.acl_model import AclOperation as Op
from pykraft.controller.acl_model import AclPermissionType as Perm
from pykraft.controller.acl_model import PatternType as Pat
from pykraft.controller.acl_model import ResourceType as Res
from pykraft.controller.acl_requests import describe_acls, security_disabled
from pykraft.controller.controller import ALTER_USER_SCRAM_CREDENTIALS, CREATE_ACLS, DELETE_ACLS
from pykraft.protocol import scram
from pykraft.protocol.errors import ErrorCode

from .controller_cluster import Quorum


def creation(res: Res, name: str, principal: str = "User:alice", op: Op = Op.READ, perm: Perm = Perm.ALLOW,
             pattern: Pat = Pat.LITERAL, host: str = "*") -> create_rq.AclCreation:
    return create_rq.AclCreation(resource_type=i8(res), resource_name=name, resource_pattern_type=i8(pattern),
                                 principal=principal, host=host, operation=i8(op), permission_type=i8(perm))


def delete_filter(res: Res = Res.ANY, name: str | None = None, pattern: Pat = Pat.ANY, principal: str | None = None,
                  op: Op = Op.ANY) -> delete_rq.DeleteAclsFilter:
    return delete_rq.DeleteAclsFilter(resource_type_filter=i8(res), resource_name_filter=name,
                                      pattern_type_filter=i8(pattern), principal_filter=principal, host_filter=None,
                                      operation=i8(op), permission_type=i8(Perm.ANY))


def describe(res: Res = Res.ANY, name: str | None = None, pattern: Pat = Pat.ANY) -> describe_rq.DescribeAclsRequest:
    return describe_rq.DescribeAclsRequest(resource_type_filter=i8(res), resource_name_filter=name,
                                           pattern_type_filter=i8(pattern), principal_filter=None, host_filter=None,
                                           operation=i8(Op.ANY), permission_type=i8(Perm.ANY))


def started() -> Quorum:
    quorum = Quorum(controllers=2)
    quorum.activate(0, now_ms=0)
    return quorum


def test_acls_are_created_once_replayed_everywhere_and_deleted_by_filter() -> None:
    quorum = started()
    answer = quorum.request(CREATE_ACLS, create_rq.CreateAclsRequest(creations=(
        creation(Res.TOPIC, "orders"), creation(Res.TOPIC, "pay-", pattern=Pat.PREFIXED, op=Op.WRITE),
        creation(Res.TOPIC, "orders"))))  # the same ACL twice: success, one record
    assert [r.error_code for r in answer.results] == [0, 0, 0]
    assert len(quorum.active.acls) == 2
    quorum.sync(1)
    assert quorum.controllers[1].acls.acls() == quorum.active.acls.acls()
    again = quorum.request(CREATE_ACLS, create_rq.CreateAclsRequest(creations=(creation(Res.TOPIC, "orders"),)))
    assert again.results[0].error_code == 0 and len(quorum.active.acls) == 2  # already there: nothing written

    found = describe_acls(quorum.active.acls, describe(Res.TOPIC, "pay-eu", Pat.MATCH))
    assert [(r.resource_name, r.pattern_type) for r in found.resources] == [("pay-", Pat.PREFIXED)]
    deleted = quorum.request(DELETE_ACLS, delete_rq.DeleteAclsRequest(filters=(
        delete_filter(Res.TOPIC, "orders", Pat.LITERAL), delete_filter(Res.TOPIC, "orders", Pat.LITERAL))))
    assert [len(r.matching_acls) for r in deleted.filter_results] == [1, 1]  # each filter reports what it matched
    assert [a.resource_name for a in quorum.active.acls.acls()] == ["pay-"]
    quorum.sync(1)
    assert quorum.controllers[1].image() == quorum.active.image()


def test_invalid_bindings_answer_invalid_request_and_write_nothing() -> None:
    quorum = started()
    answer = quorum.request(CREATE_ACLS, create_rq.CreateAclsRequest(creations=(
        creation(Res.CLUSTER, "my-cluster", op=Op.ALTER),  # the cluster is named kafka-cluster
        creation(Res.TOPIC, ""),
        creation(Res.ANY, "t"),
        creation(Res.TOPIC, "t", pattern=Pat.MATCH),
        creation(Res.TOPIC, "t", op=Op.ANY),
        creation(Res.TOPIC, "t", perm=Perm.ANY),
        creation(Res.TOPIC, "t", principal="alice"),
        creation(Res.CLUSTER, "kafka-cluster", op=Op.ALTER))))
    codes = [r.error_code for r in answer.results]
    assert codes == [ErrorCode.INVALID_REQUEST] * 7 + [0]
    assert "kafka-cluster" in answer.results[0].error_message
    assert [a.resource_type for a in quorum.active.acls.acls()] == [Res.CLUSTER]


def test_acls_survive_a_snapshot() -> None:
    quorum = started()
    quorum.request(CREATE_ACLS, create_rq.CreateAclsRequest(creations=(creation(Res.GROUP, "g"),)))
    records = list(quorum.active.snapshot_records())
    other = quorum.controllers[1]
    other.load_snapshot(records, quorum.next_offset - 1)
    assert other.acls.acls() == quorum.active.acls.acls()


def test_without_an_authorizer_acl_apis_say_security_disabled() -> None:
    answer = security_disabled(30, create_rq.CreateAclsRequest(creations=(creation(Res.TOPIC, "t"),) * 2))
    assert [r.error_code for r in answer.results] == [ErrorCode.SECURITY_DISABLED] * 2
    assert security_disabled(29, describe()).error_code == ErrorCode.SECURITY_DISABLED


def upsertion(name: str, password: str = "pw", mechanism: str = "SCRAM-SHA-256",
              iterations: int = 4096) -> alter_rq.ScramCredentialUpsertion:
    mech = scram.MECHANISMS[mechanism]
    salt = b"salt-of-" + name.encode()
    return alter_rq.ScramCredentialUpsertion(name=name, mechanism=i8(mech.type), iterations=i32(iterations),
                                             salt=salt, salted_password=scram.salted_password(mech, password, salt,
                                                                                              iterations))


def deletion(name: str, mechanism: int = 1) -> alter_rq.ScramCredentialDeletion:
    return alter_rq.ScramCredentialDeletion(name=name, mechanism=i8(mechanism))


def alter(quorum: Quorum, deletions=(), upsertions=()) -> dict[str, tuple[int, str | None]]:
    answer = quorum.request(ALTER_USER_SCRAM_CREDENTIALS, alter_rq.AlterUserScramCredentialsRequest(
        deletions=tuple(deletions), upsertions=tuple(upsertions)))
    return {r.user: (r.error_code, r.error_message) for r in answer.results}


def test_scram_credentials_are_stored_as_keys_and_verify_a_login() -> None:
    quorum = started()
    assert alter(quorum, upsertions=[upsertion("alice", "secret", iterations=8192)]) == {"alice": (0, None)}
    quorum.sync(1)
    stored = quorum.controllers[1].scram.credential("alice", 1)
    assert stored is not None and stored.iterations == 8192 and "secret" not in repr(stored)
    mech = scram.MECHANISMS["SCRAM-SHA-256"]
    salted = scram.salted_password(mech, "secret", stored.salt, stored.iterations)
    assert scram.credential_from_salted(mech, salted) == (stored.stored_key, stored.server_key)
    record = next(r for r in quorum.log if int(r.__api_key__) == 11)
    assert salted not in (record.salt, record.stored_key, record.server_key)  # never the salted password


def test_scram_alterations_are_checked_as_kafka_does() -> None:
    quorum = started()
    answer = alter(quorum, deletions=[deletion("nobody"), deletion("", 1), deletion("carol", 9)],
                   upsertions=[upsertion("few", iterations=4095), upsertion("many", iterations=16385),
                               upsertion("dup"), upsertion("dup", mechanism="SCRAM-SHA-512"), upsertion("ok")])
    assert {user: code for user, (code, _) in answer.items()} == {
        "nobody": ErrorCode.RESOURCE_NOT_FOUND, "": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "carol": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "few": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "many": ErrorCode.UNACCEPTABLE_CREDENTIAL, "dup": ErrorCode.DUPLICATE_RESOURCE, "ok": 0}
    assert answer["few"][1] == "Too few iterations" and answer["many"][1] == "Too many iterations"
    assert list(quorum.active.scram.users()) == ["ok"]
    assert alter(quorum, deletions=[deletion("ok")]) == {"ok": (0, None)}
    assert quorum.active.scram.users() == {}


def test_describe_user_scram_credentials() -> None:
    quorum = started()
    alter(quorum, upsertions=[upsertion("alice", iterations=8192)])
    alter(quorum, upsertions=[upsertion("alice", mechanism="SCRAM-SHA-512")])
    alter(quorum, upsertions=[upsertion("bob")])
    scram_image = quorum.active.scram
    everyone = scram_image.describe(describe_scram_rq.DescribeUserScramCredentialsRequest(users=None))
    assert {r.user: [(i.mechanism, i.iterations) for i in r.credential_infos] for r in everyone.results} == {
        "alice": [(1, 8192), (2, 4096)], "bob": [(1, 4096)]}
    names = tuple(describe_scram_rq.UserName(name=n) for n in ("bob", "zed", "bob", "alice"))
    some = scram_image.describe(describe_scram_rq.DescribeUserScramCredentialsRequest(users=names))
    assert {r.user: r.error_code for r in some.results} == {
        "bob": ErrorCode.DUPLICATE_RESOURCE, "zed": ErrorCode.RESOURCE_NOT_FOUND, "alice": 0}


def test_scram_below_metadata_version_3_5_iv2_is_unsupported() -> None:
    quorum = started()
    assert quorum.active.scram.alter(alter_rq.AlterUserScramCredentialsRequest(
        deletions=(), upsertions=(upsertion("a"),)), 10).response.results[0].error_code == ErrorCode.UNSUPPORTED_VERSION
