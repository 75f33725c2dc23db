"""The ACLs of the metadata image and the controller's CreateAcls/DeleteAcls (Kafka's `AclControlManager` and the
`AclCache` its StandardAuthorizer reads).

- `replay` applies AccessControlEntryRecord (an ACL with its id) and RemoveAccessControlEntryRecord (by id), on every
  controller and broker; the image keeps each ACL once by content (`existing`), and an index by resource pattern that
  the authorizer looks ACLs up in (authorizer.py).
- `create(acls, new_id)` is Kafka's createAcls: every binding validated (a concrete resource type, LITERAL or
  PREFIXED, a concrete operation, ALLOW or DENY, a resource name), an ACL already present answers success and writes
  nothing, each new one becomes a record with a fresh id (`new_id` draws it: randomness comes in).
- `delete(filters)` is deleteAcls: each filter's matching ACLs become RemoveAccessControlEntryRecords (an ACL matched by
  two filters is removed once), and every filter answers with the ACLs it matched; at most `MAX_RECORDS_PER_USER_OP`
  records in one request (Kafka's BoundedList limit), over it the filter fails.

A record that does not fit the image (a removal of an unknown id) raises `AclReplayError`: the replay counts it as a
metadata error and the image stays as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pykraft.records.metadata.schema.remove_access_control_entry_record import RemoveAccessControlEntryRecordV0

from .acl_model import (
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    acl_from_record,
    acl_to_record,
)

__all__ = ["ACL_RECORD", "REMOVE_ACL_RECORD", "AclControl", "AclCreation", "AclDeletion", "AclReplayError",
           "MAX_RECORDS_PER_USER_OP"]

ACL_RECORD = 18
REMOVE_ACL_RECORD = 19
MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's QuorumController.MAX_RECORDS_PER_USER_OP
INVALID_REQUEST = 42


class AclReplayError(Exception):
    """A removal of an ACL id the image does not hold."""


@dataclass(frozen=True, slots=True)
class AclCreation:
    """One binding's answer: error 0 (created or already present) or INVALID_REQUEST with Kafka's message."""

    error_code: int = 0
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AclDeletion:
    """One filter's answer: the ACLs it matched (now removed), or an error for the whole filter."""

    matched: tuple[StandardAcl, ...] = ()
    error_code: int = 0
    error_message: str | None = None


def validate_new_acl(acl: StandardAcl) -> str | None:
    """Kafka's AclControlManager.validateNewAcl: the message of the first problem, or None."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    return None


class AclControl:
    def __init__(self) -> None:
        self.by_id: dict[uuid.UUID, StandardAcl] = {}
        self.existing: dict[StandardAcl, uuid.UUID] = {}
        # (resource type, pattern type, name) -> the ACLs of that exact pattern: the authorizer's lookups
        self.by_pattern: dict[tuple[ResourceType, PatternType, str], list[StandardAcl]] = {}

    # ---- replay ------------------------------------------------------------------------------------------------
    def replay(self, record: object) -> None:
        key = int(record.__api_key__)  # type: ignore[attr-defined]
        if key == ACL_RECORD:
            self._add(record.id, acl_from_record(record))  # type: ignore[attr-defined]
        elif key == REMOVE_ACL_RECORD:
            self._remove(record.id)  # type: ignore[attr-defined]

    def _add(self, acl_id: uuid.UUID, acl: StandardAcl) -> None:
        old = self.by_id.get(acl_id)
        if old is not None:
            self._unindex(acl_id, old)
        self.by_id[acl_id] = acl
        self.existing[acl] = acl_id
        self.by_pattern.setdefault((acl.resource_type, acl.pattern_type, acl.resource_name), []).append(acl)

    def _remove(self, acl_id: uuid.UUID) -> None:
        acl = self.by_id.pop(acl_id, None)
        if acl is None:
            raise AclReplayError(f"Unable to replay RemoveAccessControlEntryRecord: no acl with ID {acl_id} found.")
        self._unindex(acl_id, acl)

    def _unindex(self, acl_id: uuid.UUID, acl: StandardAcl) -> None:
        if self.existing.get(acl) == acl_id:
            del self.existing[acl]
        key = (acl.resource_type, acl.pattern_type, acl.resource_name)
        entries = self.by_pattern.get(key, [])
        if acl in entries:
            entries.remove(acl)
        if not entries:
            self.by_pattern.pop(key, None)

    def snapshot_records(self) -> Iterator[object]:
        for acl_id, acl in self.by_id.items():
            yield acl_to_record(acl_id, acl)

    def __len__(self) -> int:
        return len(self.by_id)

    def acls(self, acl_filter: AclFilter | None = None) -> list[StandardAcl]:
        """Every ACL (matching `acl_filter`), in a stable order: by resource, then entry."""
        found = [acl for acl in self.by_id.values() if acl_filter is None or acl_filter.matches(acl)]
        return sorted(found, key=_order)

    def lookup(self, resource_type: ResourceType, pattern_type: PatternType, name: str) -> list[StandardAcl]:
        return self.by_pattern.get((resource_type, pattern_type, name), [])

    # ---- the controller's requests -----------------------------------------------------------------------------
    def create(self, acls: Iterable[StandardAcl],
               new_id: Callable[[], uuid.UUID]) -> tuple[list[object], list[AclCreation]]:
        """(records, one answer per binding in order)."""
        records: list[object] = []
        results: list[AclCreation] = []
        added: set[StandardAcl] = set()
        taken = set(self.by_id)
        for acl in acls:
            problem = validate_new_acl(acl)
            if problem is not None:
                results.append(AclCreation(INVALID_REQUEST, problem))
                continue
            if acl not in self.existing and acl not in added:
                added.add(acl)
                acl_id = new_id()
                while acl_id in taken:
                    acl_id = new_id()
                taken.add(acl_id)
                records.append(acl_to_record(acl_id, acl))
            results.append(AclCreation())
        return records, results

    def delete(self, filters: Iterable[AclFilter]) -> tuple[list[object], list[AclDeletion]]:
        removed: dict[uuid.UUID, object] = {}
        results: list[AclDeletion] = []
        for acl_filter in filters:
            unknown = acl_filter.unknown_field()
            if unknown is not None:
                results.append(AclDeletion((), INVALID_REQUEST, f"Unknown {unknown} in the filter."))
                continue
            matched = [(acl_id, acl) for acl_id, acl in self.by_id.items() if acl_filter.matches(acl)]
            new = {acl_id for acl_id, _ in matched if acl_id not in removed}
            if len(removed) + len(new) > MAX_RECORDS_PER_USER_OP:
                results.append(AclDeletion((), INVALID_REQUEST, f"Cannot remove more than "
                                           f"{MAX_RECORDS_PER_USER_OP} acls in a single delete operation."))
                continue
            for acl_id in new:
                removed[acl_id] = RemoveAccessControlEntryRecordV0(id=acl_id)
            results.append(AclDeletion(tuple(sorted((acl for _, acl in matched), key=_order))))
        return list(removed.values()), results


def _order(acl: StandardAcl) -> tuple[object, ...]:
    return (acl.resource_type, acl.pattern_type, acl.resource_name, acl.principal, acl.host, acl.operation,
            acl.permission)
