"""ACL and SCRAM credential requests of the admin client (Kafka's Admin.createAcls / deleteAcls / describeAcls and
alterUserScramCredentials / describeUserScramCredentials), for `pykraft acls` and `pykraft configs --entity-type
users`. Where they go is Kafka's admin client's rule: DescribeAcls and DescribeUserScramCredentials to any node (a
broker answers from its image; a controller does not serve DescribeUserScramCredentials, as in Kafka), the writes to
the active controller (a broker forwards them).

AlterUserScramCredentials sends what Kafka's client sends: a fresh random salt and the salted password (PBKDF2 with
the mechanism's HMAC), never the password itself. Answers are returned as they came; a top-level error raises
AdminError.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.alter_user_scram_credentials.v0 import request as alter_rq
from kio.schema.create_acls.v3 import request as create_rq
from kio.schema.delete_acls.v3 import request as delete_rq
from kio.schema.describe_acls.v3 import request as describe_rq
from kio.schema.describe_user_scram_credentials.v0 import request as describe_scram_rq
from kio.static.primitive import i8, i32

from pykraft.protocol import scram
from pykraft.protocol.errors import ErrorCode
from pykraft.storage.scram_option import kafka_salt

from .client import AdminClient
from .errors import AdminError
from .model import error_code_of
from .responses import Outcome

__all__ = ["AclSpec", "FilterSpec", "alter_scram", "create_acls", "delete_acls", "describe_acls", "describe_scram"]

# (resource type, name, pattern type, principal, host, operation, permission type): Kafka's codes
AclSpec = tuple[int, str, int, str, str, int, int]
# the same with None for "any" name, principal or host
FilterSpec = tuple[int, str | None, int, str | None, str | None, int, int]


def _top_level(response: Any) -> Outcome:
    return Outcome(error_code_of(response.error_code), getattr(response, "error_message", None))


async def describe_acls(client: AdminClient, spec: FilterSpec) -> Any:
    kind, name, pattern, principal, host, operation, permission = spec
    message = describe_rq.DescribeAclsRequest(resource_type_filter=i8(kind), resource_name_filter=name,
                                              pattern_type_filter=i8(pattern), principal_filter=principal,
                                              host_filter=host, operation=i8(operation),
                                              permission_type=i8(permission))
    return await client.any_node_call("DescribeAcls", message, _top_level)


async def create_acls(client: AdminClient, specs: Sequence[AclSpec]) -> Any:
    message = create_rq.CreateAclsRequest(creations=tuple(create_rq.AclCreation(
        resource_type=i8(kind), resource_name=name, resource_pattern_type=i8(pattern), principal=principal,
        host=host, operation=i8(operation), permission_type=i8(permission))
        for kind, name, pattern, principal, host, operation, permission in specs))
    return await client.controller_call("CreateAcls", message, _first_error("results"))


async def delete_acls(client: AdminClient, specs: Sequence[FilterSpec]) -> Any:
    message = delete_rq.DeleteAclsRequest(filters=tuple(delete_rq.DeleteAclsFilter(
        resource_type_filter=i8(kind), resource_name_filter=name, pattern_type_filter=i8(pattern),
        principal_filter=principal, host_filter=host, operation=i8(operation), permission_type=i8(permission))
        for kind, name, pattern, principal, host, operation, permission in specs))
    return await client.controller_call("DeleteAcls", message, _first_error("filter_results"))


def _first_error(field: str):
    """Per-item answers: the first error counts (NOT_CONTROLLER on every item is retried by the client)."""
    def outcome(response: Any) -> Outcome:
        for item in getattr(response, field):
            if int(item.error_code) != 0:
                return Outcome(error_code_of(item.error_code), item.error_message)
        return Outcome(ErrorCode.NONE)
    return outcome


async def describe_scram(client: AdminClient, users: Iterable[str] | None) -> Any:
    if client.bootstrap_kind == "controller":  # Kafka's controllers do not serve it either
        raise AdminError(ErrorCode.UNSUPPORTED_VERSION, "The node does not support DESCRIBE_USER_SCRAM_CREDENTIALS")
    names = None if users is None else tuple(describe_scram_rq.UserName(name=u) for u in users)
    return await client.any_node_call("DescribeUserScramCredentials",
                                      describe_scram_rq.DescribeUserScramCredentialsRequest(users=names), _top_level)


async def alter_scram(client: AdminClient, deletions: Sequence[tuple[str, str]],
                      upsertions: Sequence[tuple[str, str, int, str]], rng: random.Random | None = None) -> Any:
    """`deletions`: (user, mechanism); `upsertions`: (user, mechanism, iterations, password)."""
    rng = rng or random.SystemRandom()
    upserts = []
    for user, mechanism_name, iterations, password in upsertions:
        mechanism = scram.MECHANISMS[mechanism_name]
        salt = kafka_salt(rng)
        upserts.append(alter_rq.ScramCredentialUpsertion(
            name=user, mechanism=i8(mechanism.type), iterations=i32(iterations), salt=salt,
            salted_password=scram.salted_password(mechanism, password, salt, iterations)))
    message = alter_rq.AlterUserScramCredentialsRequest(
        deletions=tuple(alter_rq.ScramCredentialDeletion(name=user, mechanism=i8(scram.MECHANISMS[m].type))
                        for user, m in deletions), upsertions=tuple(upserts))
    return await client.controller_call("AlterUserScramCredentials", message, _first_error("results"))
