"""The StandardAuthorizer's decisions (Kafka's `StandardAuthorizerData.authorize`), a pure function of the ACL image
(acl_control.py), the authorizer's settings and one action. Brokers and controllers both call it, each over the ACLs
it replayed from the metadata log.

The rules, in order:
1. a principal named in `super.users` may do anything;
2. before the initial load of the ACLs completes (`Authorizer.loaded` False), anyone else is refused with
   `AuthorizerNotReadyError` (Kafka's AuthorizerNotReadyException: the request fails, it is not a denial);
3. the ACLs that apply to a resource are those of its type whose pattern selects its name: LITERAL with the same
   name, LITERAL "*" (any name), PREFIXED with a prefix of the name;
4. among those, an ACL matches the action when its principal is the caller's or "User:*", its host is the caller's
   address or "*", and its operation is the action's or ALL; an ALLOW ACL also grants DESCRIBE when it allows READ,
   WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS when it allows ALTER_CONFIGS (a DENY ACL denies only its own
   operation, or ALL);
5. any matching DENY denies; else any matching ALLOW allows; else, when the resource has no ACL at all (for anyone),
   `allow.everyone.if.no.acl.found` decides; else it is denied.

`authorize_by_resource_type` is Kafka's Authorizer.authorizeByResourceType (InitProducerId's "may this principal
write to any topic"), and `authorized_operations` the AuthorizedOperations bit fields of Metadata, DescribeCluster,
DescribeGroups and DescribeTopicPartitions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .acl_control import AclControl
from .acl_model import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)

__all__ = ["AuthorizerNotReadyError", "AuthorizerSettings", "authorize", "authorize_by_resource_type",
           "authorized_operations", "parse_super_users"]

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                               AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


class AuthorizerNotReadyError(Exception):
    """The ACLs are not loaded yet and the principal is not a super user (Kafka's AuthorizerNotReadyException)."""


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()  # "User:admin", as `super.users` lists them
    allow_if_no_acl: bool = False  # allow.everyone.if.no.acl.found
    loaded: bool = True  # the initial load of the ACLs completed


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: principals separated by ';' (Kafka's StandardAuthorizer.getConfiguredSuperUsers). ValueError
    names an entry that is not Type:Name."""
    found = set()
    for value in (text or "").split(";"):
        value = value.strip()
        if not value:
            continue
        kind, sep, name = value.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"expected a string in format principalType:principalName but got {value}")
        found.add(value)
    return frozenset(found)


def _matching_acls(acls: AclControl, resource_type: ResourceType, name: str) -> list[StandardAcl]:
    """Every ACL whose pattern selects `name` (rule 3)."""
    found = list(acls.lookup(resource_type, PatternType.LITERAL, name))
    if name != WILDCARD:
        found += acls.lookup(resource_type, PatternType.LITERAL, WILDCARD)
    for end in range(1, len(name) + 1):
        found += acls.lookup(resource_type, PatternType.PREFIXED, name[:end])
    return found


def _result(acl: StandardAcl, principal: str, host: str, operation: AclOperation) -> AclPermissionType | None:
    """Rule 4: the ACL's permission when it matches the action, else None."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission == AclPermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return acl.permission


def authorize(acls: AclControl, settings: AuthorizerSettings, principal: str, host: str, operation: AclOperation,
              resource_type: ResourceType, name: str) -> bool:
    """Whether `principal` ("User:alice") connected from `host` may do `operation` on the named resource."""
    if principal in settings.super_users:
        return True
    if not settings.loaded:
        raise AuthorizerNotReadyError("The authorizer is not ready: the initial load of the ACLs has not completed")
    candidates = _matching_acls(acls, resource_type, name)
    allowed = False
    for acl in candidates:
        result = _result(acl, principal, host, operation)
        if result == AclPermissionType.DENY:
            return False
        if result == AclPermissionType.ALLOW:
            allowed = True
    if allowed:
        return True
    return settings.allow_if_no_acl and not candidates


def authorized_operations(acls: AclControl, settings: AuthorizerSettings, principal: str, host: str,
                          resource_type: ResourceType, name: str) -> int:
    """The bit field (1 << operation code) of the supported operations of the resource this principal may do."""
    field = 0
    for operation in SUPPORTED_OPERATIONS[resource_type]:
        if authorize(acls, settings, principal, host, operation, resource_type, name):
            field |= 1 << int(operation)
    return field


def authorize_by_resource_type(acls: AclControl, settings: AuthorizerSettings, principal: str, host: str,
                               operation: AclOperation, resource_type: ResourceType) -> bool:
    """Whether some resource of `resource_type` exists (or could) that `principal` may do `operation` on: an ALLOW
    pattern not dominated by a DENY (Kafka's Authorizer.authorizeByResourceType)."""
    if authorize(acls, settings, principal, host, operation, resource_type, "hardcode"):
        return True  # super users, and a wildcard ALLOW without DENY
    deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
    allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
    wildcard_allow = False
    for acl in _of_type(acls.by_id.values(), resource_type):
        if acl.host not in (host, WILDCARD) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
            continue
        if acl.operation not in (operation, AclOperation.ALL) or acl.pattern_type not in deny:
            continue
        if acl.permission == AclPermissionType.DENY:
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                return False
            deny[acl.pattern_type].add(acl.resource_name)
        elif acl.permission == AclPermissionType.ALLOW:
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                wildcard_allow = True  # decides only if no wildcard DENY follows
                continue
            allow[acl.pattern_type].add(acl.resource_name)
    if wildcard_allow:
        return True
    for pattern_type, names in allow.items():
        for name in names:
            if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                continue
            if not any(name[:end] in deny[PatternType.PREFIXED] for end in range(1, len(name) + 1)):
                return True
    return False


def _of_type(acls: Iterable[StandardAcl], resource_type: ResourceType) -> Iterable[StandardAcl]:
    return (acl for acl in acls if acl.resource_type == resource_type)
