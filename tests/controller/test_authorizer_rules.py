"""The StandardAuthorizer's decisions as one table against Kafka's documented rules (docs/security.html "Authorization
and ACLs", StandardAuthorizerData): DENY before ALLOW, LITERAL / PREFIXED / wildcard patterns, implied operations,
super.users, allow.everyone.if.no.acl.found, host matching, and the not-ready refusal before the initial load."""

from __future__ import annotations

import uuid

import pytest

from pykraft.controller.acl_control import AclControl
from pykraft.controller.acl_model import (
    AclOperation as Op,
    AclPermissionType as Perm,
    PatternType as Pat,
    ResourceType as Res,
    StandardAcl,
    acl_to_record,
)
from pykraft.controller.authorizer import (
    AuthorizerNotReadyError,
    AuthorizerSettings,
    authorize,
    authorize_by_resource_type,
    authorized_operations,
    parse_super_users,
)

ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER_HOST = "10.0.0.1", "10.0.0.2"


def acl(res: Res, name: str, pattern: Pat, principal: str, op: Op, perm: Perm, host: str = "*") -> StandardAcl:
    return StandardAcl(res, name, pattern, principal, host, op, perm)


def image(*acls: StandardAcl) -> AclControl:
    control = AclControl()
    for entry in acls:
        control.replay(acl_to_record(uuid.uuid4(), entry))
    return control


ALLOW, DENY = Perm.ALLOW, Perm.DENY
T, G, C, TX = Res.TOPIC, Res.GROUP, Res.CLUSTER, Res.TRANSACTIONAL_ID
LIT, PRE = Pat.LITERAL, Pat.PREFIXED

# (case, ACLs, settings, principal, host, operation, resource type, name, expected)
CASES = [
    ("no ACL, default deny", [], {}, ALICE, HOST, Op.READ, T, "t", False),
    ("no ACL, allow.everyone.if.no.acl.found", [], {"allow_if_no_acl": True}, ALICE, HOST, Op.READ, T, "t", True),
    ("an ACL for someone else disables allow.everyone on that resource",
     [acl(T, "t", LIT, BOB, Op.READ, ALLOW)], {"allow_if_no_acl": True}, ALICE, HOST, Op.READ, T, "t", False),
    ("allow.everyone still applies to other resources",
     [acl(T, "t", LIT, BOB, Op.READ, ALLOW)], {"allow_if_no_acl": True}, ALICE, HOST, Op.READ, T, "u", True),
    ("literal allow", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.READ, T, "t", True),
    ("literal allow is for that name only", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.READ, T,
     "t2", False),
    ("other operation not allowed", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.WRITE, T, "t",
     False),
    ("other principal not allowed", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, BOB, HOST, Op.READ, T, "t", False),
    ("other resource type not allowed", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.READ, G, "t",
     False),
    ("DENY before ALLOW", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "t", LIT, ALICE, Op.READ, DENY)], {},
     ALICE, HOST, Op.READ, T, "t", False),
    ("DENY on the wildcard principal denies everyone",
     [acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "t", LIT, "User:*", Op.READ, DENY)], {}, ALICE, HOST, Op.READ,
     T, "t", False),
    ("ALLOW on the wildcard principal", [acl(T, "t", LIT, "User:*", Op.WRITE, ALLOW)], {}, BOB, HOST, Op.WRITE, T,
     "t", True),
    ("wildcard resource name", [acl(T, "*", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.READ, T, "anything",
     True),
    ("wildcard DENY beats a literal ALLOW",
     [acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "*", LIT, ALICE, Op.READ, DENY)], {}, ALICE, HOST, Op.READ, T,
     "t", False),
    ("prefixed allow", [acl(T, "pay-", PRE, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST, Op.WRITE, T, "pay-eu", True),
    ("prefixed allow covers the prefix itself", [acl(T, "pay-", PRE, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST,
     Op.WRITE, T, "pay-", True),
    ("prefixed allow does not cover another prefix", [acl(T, "pay-", PRE, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST,
     Op.WRITE, T, "pa", False),
    ("a literal name that is a prefix does not match", [acl(T, "pay", LIT, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST,
     Op.WRITE, T, "payroll", False),
    ("prefixed DENY beats a literal ALLOW",
     [acl(T, "pay-eu", LIT, ALICE, Op.WRITE, ALLOW), acl(T, "pay-", PRE, ALICE, Op.WRITE, DENY)], {}, ALICE, HOST,
     Op.WRITE, T, "pay-eu", False),
    ("a shorter prefixed DENY still applies",
     [acl(T, "pay-eu-", PRE, ALICE, Op.WRITE, ALLOW), acl(T, "p", PRE, ALICE, Op.WRITE, DENY)], {}, ALICE, HOST,
     Op.WRITE, T, "pay-eu-1", False),
    ("READ implies DESCRIBE", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.DESCRIBE, T, "t", True),
    ("WRITE implies DESCRIBE", [acl(T, "t", LIT, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST, Op.DESCRIBE, T, "t", True),
    ("DELETE implies DESCRIBE", [acl(T, "t", LIT, ALICE, Op.DELETE, ALLOW)], {}, ALICE, HOST, Op.DESCRIBE, T, "t",
     True),
    ("ALTER implies DESCRIBE", [acl(T, "t", LIT, ALICE, Op.ALTER, ALLOW)], {}, ALICE, HOST, Op.DESCRIBE, T, "t", True),
    ("CREATE does not imply DESCRIBE", [acl(T, "t", LIT, ALICE, Op.CREATE, ALLOW)], {}, ALICE, HOST, Op.DESCRIBE, T,
     "t", False),
    ("ALTER_CONFIGS implies DESCRIBE_CONFIGS", [acl(T, "t", LIT, ALICE, Op.ALTER_CONFIGS, ALLOW)], {}, ALICE, HOST,
     Op.DESCRIBE_CONFIGS, T, "t", True),
    ("DESCRIBE does not imply READ", [acl(T, "t", LIT, ALICE, Op.DESCRIBE, ALLOW)], {}, ALICE, HOST, Op.READ, T, "t",
     False),
    ("a DENY of READ does not deny DESCRIBE",
     [acl(T, "t", LIT, ALICE, Op.READ, DENY), acl(T, "t", LIT, ALICE, Op.DESCRIBE, ALLOW)], {}, ALICE, HOST,
     Op.DESCRIBE, T, "t", True),
    ("ALL allows any operation", [acl(T, "t", LIT, ALICE, Op.ALL, ALLOW)], {}, ALICE, HOST, Op.ALTER_CONFIGS, T, "t",
     True),
    ("DENY ALL denies any operation",
     [acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "t", LIT, ALICE, Op.ALL, DENY)], {}, ALICE, HOST, Op.READ, T,
     "t", False),
    ("host matches", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW, host=HOST)], {}, ALICE, HOST, Op.READ, T, "t", True),
    ("other host not allowed", [acl(T, "t", LIT, ALICE, Op.READ, ALLOW, host=HOST)], {}, ALICE, OTHER_HOST, Op.READ,
     T, "t", False),
    ("a DENY from one host only",
     [acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "t", LIT, ALICE, Op.READ, DENY, host=OTHER_HOST)], {}, ALICE,
     HOST, Op.READ, T, "t", True),
    ("super user despite DENY", [acl(T, "t", LIT, "User:admin", Op.ALL, DENY)], {"super_users": {"User:admin"}},
     "User:admin", HOST, Op.DELETE, T, "t", True),
    ("super user on the cluster", [], {"super_users": {"User:admin"}}, "User:admin", HOST, Op.CLUSTER_ACTION, C,
     "kafka-cluster", True),
    ("cluster action granted by ACL", [acl(C, "kafka-cluster", LIT, "User:broker", Op.CLUSTER_ACTION, ALLOW)], {},
     "User:broker", HOST, Op.CLUSTER_ACTION, C, "kafka-cluster", True),
    ("group read", [acl(G, "g", LIT, ALICE, Op.READ, ALLOW)], {}, ALICE, HOST, Op.READ, G, "g", True),
    ("transactional id write", [acl(TX, "tx-", PRE, ALICE, Op.WRITE, ALLOW)], {}, ALICE, HOST, Op.WRITE, TX, "tx-1",
     True),
    ("an SSL principal", [acl(T, "t", LIT, "User:CN=client,O=pykraft", Op.READ, ALLOW)], {},
     "User:CN=client,O=pykraft", HOST, Op.READ, T, "t", True),
]


@pytest.mark.parametrize(("case", "acls", "settings", "principal", "host", "op", "res", "name", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_standard_authorizer_rule(case, acls, settings, principal, host, op, res, name, expected) -> None:
    config = AuthorizerSettings(frozenset(settings.get("super_users", ())), settings.get("allow_if_no_acl", False))
    assert authorize(image(*acls), config, principal, host, op, res, name) is expected


def test_not_ready_refuses_everyone_but_super_users() -> None:
    settings = AuthorizerSettings(frozenset({"User:admin"}), True, loaded=False)
    assert authorize(image(), settings, "User:admin", HOST, Op.ALTER, C, "kafka-cluster")
    with pytest.raises(AuthorizerNotReadyError):
        authorize(image(), settings, ALICE, HOST, Op.READ, T, "t")


def test_authorized_operations_bit_field() -> None:
    acls = image(acl(T, "t", LIT, ALICE, Op.READ, ALLOW), acl(T, "t", LIT, ALICE, Op.ALTER_CONFIGS, ALLOW))
    bits = authorized_operations(acls, AuthorizerSettings(), ALICE, HOST, T, "t")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (1 << Op.DESCRIBE_CONFIGS)
    assert authorized_operations(acls, AuthorizerSettings(), BOB, HOST, T, "t") == 0


@pytest.mark.parametrize(("acls", "expected"), [
    ([], False),
    ([acl(T, "t", LIT, ALICE, Op.WRITE, ALLOW)], True),
    ([acl(T, "t", LIT, ALICE, Op.WRITE, ALLOW), acl(T, "t", LIT, ALICE, Op.WRITE, DENY)], False),
    ([acl(T, "t-1", LIT, ALICE, Op.WRITE, ALLOW), acl(T, "t-", PRE, ALICE, Op.WRITE, DENY)], False),
    ([acl(T, "t-", PRE, ALICE, Op.WRITE, ALLOW), acl(T, "t-1", LIT, ALICE, Op.WRITE, DENY)], True),
    ([acl(T, "*", LIT, ALICE, Op.WRITE, ALLOW)], True),
    ([acl(T, "*", LIT, ALICE, Op.WRITE, ALLOW), acl(T, "*", LIT, ALICE, Op.WRITE, DENY)], False),
    ([acl(T, "t", LIT, BOB, Op.WRITE, ALLOW)], False),
    ([acl(T, "t", LIT, ALICE, Op.READ, ALLOW)], False),
])
def test_authorize_by_resource_type(acls, expected) -> None:
    """Kafka's authorizeByResourceType: some topic alice may WRITE to (an ALLOW not dominated by a DENY)."""
    assert authorize_by_resource_type(image(*acls), AuthorizerSettings(), ALICE, HOST, Op.WRITE, T) is expected


def test_super_users_setting() -> None:
    assert parse_super_users("User:admin; User:broker;;") == {"User:admin", "User:broker"}
    with pytest.raises(ValueError, match="principalType:principalName"):
        parse_super_users("admin")
