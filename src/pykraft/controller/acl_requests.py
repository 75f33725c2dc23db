"""CreateAcls, DeleteAcls and DescribeAcls answered from the ACL image (Kafka's `AclApis` with the controller's
`AclControlManager` behind it). Responses are built at the newest version; the host lowers them to the request's.

The checks Kafka makes before the controller sees a binding: a CLUSTER ACL must name "kafka-cluster", a resource name
must not be empty, and no field may be UNKNOWN (Kafka's request parser refuses those; here each such binding or filter
answers INVALID_REQUEST). pykraft also refuses a principal that is not `Type:Name`: Kafka would store it and fail every
later authorization of that resource while parsing it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kio.static.primitive import i8

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .acl_control import AclControl, AclCreation
from .acl_model import (
    CLUSTER_NAME,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
    enum_of,
)
from .result import ControllerResult

create_rs = schema_module("kio.schema.create_acls.v3.response")
delete_rs = schema_module("kio.schema.delete_acls.v3.response")
describe_rs = schema_module("kio.schema.describe_acls.v3.response")

__all__ = ["acl_filter", "create_acls", "delete_acls", "describe_acls", "security_disabled"]


def _binding(creation: Any) -> StandardAcl:
    return StandardAcl(enum_of(ResourceType, creation.resource_type), creation.resource_name,
                       enum_of(PatternType, creation.resource_pattern_type), creation.principal, creation.host,
                       enum_of(AclOperation, creation.operation), enum_of(AclPermissionType, creation.permission_type))


def acl_filter(message: Any) -> AclFilter:
    """The AclFilter of a DescribeAcls request or a DeleteAcls filter (the same field names)."""
    return AclFilter(enum_of(ResourceType, message.resource_type_filter), message.resource_name_filter,
                     enum_of(PatternType, message.pattern_type_filter), message.principal_filter,
                     message.host_filter, enum_of(AclOperation, message.operation),
                     enum_of(AclPermissionType, message.permission_type))


def _refusal(acl: StandardAcl) -> str | None:
    """AclApis' checks (and the UNKNOWN codes Kafka's parser refuses) before the controller's own."""
    if 0 in (acl.resource_type, acl.pattern_type, acl.operation, acl.permission):
        return "CreatableAcls contain unknown elements"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    kind, sep, name = acl.principal.partition(":")
    if not sep or not kind or not name:
        return f"expected a string in format principalType:principalName but got {acl.principal}"
    return None


def create_acls(acls: AclControl, request: Any, new_id: Callable[[], uuid.UUID]) -> ControllerResult:
    bindings = [_binding(creation) for creation in request.creations]
    refusals = [_refusal(acl) for acl in bindings]
    records, created = acls.create([acl for acl, refused in zip(bindings, refusals) if refused is None], new_id)
    answers = iter(created)
    results = []
    for refused in refusals:
        result = AclCreation(ErrorCode.INVALID_REQUEST, refused) if refused is not None else next(answers)
        results.append(create_rs.AclCreationResult(error_code=ErrorCode(result.error_code),
                                                   error_message=result.error_message))
    return ControllerResult(tuple(records), create_rs.CreateAclsResponse(throttle_time=ZERO_THROTTLE,
                                                                         results=tuple(results)))


def delete_acls(acls: AclControl, request: Any) -> ControllerResult:
    records, deleted = acls.delete(acl_filter(f) for f in request.filters)
    results = []
    for deletion in deleted:
        matching = tuple(delete_rs.DeleteAclsMatchingAcl(
            error_code=ErrorCode.NONE, error_message=None, resource_type=i8(acl.resource_type),
            resource_name=acl.resource_name, pattern_type=i8(acl.pattern_type), principal=acl.principal,
            host=acl.host, operation=i8(acl.operation), permission_type=i8(acl.permission)) for acl in deletion.matched)
        results.append(delete_rs.DeleteAclsFilterResult(error_code=ErrorCode(deletion.error_code),
                                                        error_message=deletion.error_message,
                                                        matching_acls=matching))
    return ControllerResult(tuple(records), delete_rs.DeleteAclsResponse(throttle_time=ZERO_THROTTLE,
                                                                         filter_results=tuple(results)))


def describe_acls(acls: AclControl, request: Any) -> Any:
    """Every ACL the filter matches, grouped by resource pattern (Kafka's DescribeAclsResponse.aclsResources)."""
    wanted = acl_filter(request)
    unknown = wanted.unknown_field()
    if unknown is not None:
        return _describe_error(ErrorCode.INVALID_REQUEST, f"DescribeAclsRequest contains an UNKNOWN {unknown}")
    grouped: dict[tuple[ResourceType, str, PatternType], list[Any]] = {}
    for acl in acls.acls(wanted):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            describe_rs.AclDescription(principal=acl.principal, host=acl.host, operation=i8(acl.operation),
                                       permission_type=i8(acl.permission)))
    resources = tuple(describe_rs.DescribeAclsResource(resource_type=i8(kind), resource_name=name,
                                                       pattern_type=i8(pattern), acls=tuple(entries))
                      for (kind, name, pattern), entries in grouped.items())
    return describe_rs.DescribeAclsResponse(throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE,
                                            error_message=None, resources=resources)


def _describe_error(error: ErrorCode, text: str) -> Any:
    return describe_rs.DescribeAclsResponse(throttle_time=ZERO_THROTTLE, error_code=error, error_message=text,
                                            resources=())


def security_disabled(api_key: int, request: Any) -> Any:
    """The answer of a node without an authorizer (Kafka's SECURITY_DISABLED: "No Authorizer is configured")."""
    text = "No Authorizer is configured on the broker" if api_key == 29 else "No Authorizer is configured."
    if api_key == 29:
        return _describe_error(ErrorCode.SECURITY_DISABLED, text)
    if api_key == 30:
        return create_rs.CreateAclsResponse(throttle_time=ZERO_THROTTLE, results=tuple(
            create_rs.AclCreationResult(error_code=ErrorCode.SECURITY_DISABLED, error_message=text)
            for _ in request.creations))
    return delete_rs.DeleteAclsResponse(throttle_time=ZERO_THROTTLE, filter_results=tuple(
        delete_rs.DeleteAclsFilterResult(error_code=ErrorCode.SECURITY_DISABLED, error_message=text,
                                         matching_acls=()) for _ in request.filters))
