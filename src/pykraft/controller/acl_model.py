"""Kafka's ACL vocabulary: resource types, pattern types, operations and permission types with their wire codes, an
ACL (`StandardAcl`: a resource pattern and an access control entry) and the filters of DescribeAcls and DeleteAcls
(`AclFilter`: Kafka's `AclBindingFilter.matches`).

Codes are Kafka's (`ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`); names print as Kafka's enums
do (`ResourceType.TOPIC.name` is "TOPIC"), which is what kafka-acls.sh shows and the pipeline's tables hold.
"""

from __future__ import annotations

import enum
from typing import TypeVar
from dataclasses import dataclass

from kio.static.primitive import i8

from pykraft.records.metadata.schema.access_control_entry_record import AccessControlEntryRecordV0

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "StandardAcl",
    "SUPPORTED_OPERATIONS",
    "acl_from_record",
    "acl_to_record",
    "enum_of",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = ResourceType
O = AclOperation
# Kafka's AclEntry.supportedOperations: what an AuthorizedOperations bit field is computed over.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    E.TOPIC: (O.READ, O.WRITE, O.CREATE, O.DESCRIBE, O.DELETE, O.ALTER, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    E.GROUP: (O.READ, O.DESCRIBE, O.DELETE, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS),
    E.CLUSTER: (O.CREATE, O.CLUSTER_ACTION, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS, O.IDEMPOTENT_WRITE, O.ALTER,
                O.DESCRIBE),
    E.TRANSACTIONAL_ID: (O.DESCRIBE, O.WRITE),
    E.DELEGATION_TOKEN: (O.DESCRIBE,),
    E.USER: (O.CREATE_TOKENS, O.DESCRIBE_TOKENS),
}


_Code = TypeVar("_Code", bound=enum.IntEnum)


def enum_of(kind: type[_Code], code: int) -> _Code:
    """Kafka's `fromCode`: an unknown code is UNKNOWN, never an exception."""
    try:
        return kind(int(code))
    except ValueError:
        return kind(0)


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One ACL: ALLOW or DENY `principal` from `host` to do `operation` on the resources `pattern_type` and
    `resource_name` select."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str  # "User:alice", "User:*"
    host: str  # an IP address or "*"
    operation: AclOperation
    permission: AclPermissionType

    def describe(self) -> str:
        """Kafka's AccessControlEntry.toString, as kafka-acls.sh prints an entry."""
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
                f"permissionType={self.permission.name})")

    def pattern_text(self) -> str:
        """Kafka's ResourcePattern.toString."""
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.resource_name}, "
                f"patternType={self.pattern_type.name})")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None for a name, principal or host matches anything; ANY for a code does too."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def unknown_field(self) -> str | None:
        """The first UNKNOWN code (Kafka refuses a filter carrying one), or None."""
        for name, value in (("resource type", self.resource_type), ("pattern type", self.pattern_type),
                            ("operation", self.operation), ("permission type", self.permission)):
            if value == 0:
                return name
        return None

    def matches(self, acl: StandardAcl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: StandardAcl) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        # MATCH: the ACLs that would apply to a resource of this literal name
        if acl.pattern_type == PatternType.LITERAL:
            return self.resource_name == acl.resource_name or acl.resource_name == WILDCARD
        return acl.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(acl.resource_name)

    def _matches_entry(self, acl: StandardAcl) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation not in (AclOperation.ANY, acl.operation):
            return False
        return self.permission in (AclPermissionType.ANY, acl.permission)


def acl_from_record(record: object) -> StandardAcl:
    """An AccessControlEntryRecord's ACL (codes Kafka does not know become UNKNOWN, as StandardAcl.fromRecord)."""
    return StandardAcl(enum_of(ResourceType, record.resource_type), record.resource_name,  # type: ignore[attr-defined]
                       enum_of(PatternType, record.pattern_type), record.principal,  # type: ignore[attr-defined]
                       record.host, enum_of(AclOperation, record.operation),  # type: ignore[attr-defined]
                       enum_of(AclPermissionType, record.permission_type))  # type: ignore[attr-defined]


def acl_to_record(acl_id: object, acl: StandardAcl) -> object:
    return AccessControlEntryRecordV0(id=acl_id, resource_type=i8(acl.resource_type),  # type: ignore[arg-type]
                                      resource_name=acl.resource_name, pattern_type=i8(acl.pattern_type),
                                      principal=acl.principal, host=acl.host, operation=i8(acl.operation),
                                      permission_type=i8(acl.permission))
