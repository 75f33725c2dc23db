"""`pykraft acls`: Kafka's kafka-acls.sh (AclCommand): a kafka-acls.sh line runs with `pykraft acls` in its place, with
Kafka's flags (acls_args.py) and output texts:

- `--add`: per resource, `Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`: `
  then one `\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)` line per ACL, then CreateAcls;
- `--remove`: Kafka's confirmation question per resource filter (answer y on stdin, or --force), then DeleteAcls: the
  given ACLs, or every ACL of the filter when no principal is given;
- `--list`: `Current ACLs for resource `...`: ` and its ACLs, per resource (every ACL without a resource flag;
  `--resource-pattern-type match` lists the ACLs that apply to the named resources); with `--principal`, under
  `ACLs for principal `User:alice``, only that principal's.
Resources and ACLs are printed sorted (Kafka's are in hash order). A usage error is Kafka's message on stderr, a
failure `Error while executing ACL command: <Kafka's exception>: <message>`; both exit 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import typer

from pykraft.admin import security
from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminError
from pykraft.controller.acl_model import AclOperation, AclPermissionType, PatternType, ResourceType
from pykraft.protocol.errors import ErrorCode

from . import acls_args as args_
from .metadata_quorum_cmd import Connection, ToolFailure, run_admin

EXIT_FAILURE = 1
USAGE = ("Usage: pykraft acls --bootstrap-server H:P | --bootstrap-controller H:P [--command-config F] "
         "--add | --remove | --list [--topic T] [--group G] [--cluster] [--transactional-id X] "
         "[--resource-pattern-type literal|prefixed|any|match] [--allow-principal P] [--deny-principal P] "
         "[--allow-host H] [--deny-host H] [--operation OP] [--producer] [--consumer] [--idempotent] [--force] "
         "[--principal P]")
_EXCEPTIONS = {
    ErrorCode.SECURITY_DISABLED: "SecurityDisabledException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    ErrorCode.INVALID_REQUEST: "InvalidRequestException",
    ErrorCode.UNSUPPORTED_VERSION: "UnsupportedVersionException",
    ErrorCode.NOT_CONTROLLER: "NotControllerException",
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
}
NL = "\n"


def run(argv: Sequence[str]) -> int:
    if not argv:
        typer.echo(USAGE, err=True)
        return EXIT_FAILURE
    try:
        options = args_.parse(argv)
        if options.has("help"):
            typer.echo(USAGE)
            return 0
        if options.has("version"):
            from importlib.metadata import version

            typer.echo(version("pykraft"))
            return 0
        config = options.value("command-config")
        conn = Connection(options.value("bootstrap-controller"), options.value("bootstrap-server"),
                          Path(config) if config else None)
        if options.has("add"):
            plan = _additions(options)
            return _admin(conn, lambda client: add(client, plan))
        if options.has("remove"):
            return _admin(conn, lambda client: remove(client, options))
        return _admin(conn, lambda client: list_acls(client, options))
    except args_.UsageError as failure:
        typer.echo(str(failure), err=True)
        return EXIT_FAILURE


def _admin(conn: Connection, operation) -> int:
    async def guarded(client: AdminClient) -> int:
        try:
            await operation(client)
        except AdminError as exc:
            name = _EXCEPTIONS.get(exc.code, exc.code.name)
            raise ToolFailure(f"org.apache.kafka.common.errors.{name}: {exc.message or exc.code.name}") from None
        return 0

    try:
        return run_admin(conn, guarded)
    except ToolFailure as failure:
        typer.echo(f"Error while executing ACL command: {' '.join(str(failure).split())}")
        return EXIT_FAILURE


def _pattern(resource: tuple[ResourceType, str | None, PatternType]) -> str:
    kind, name, pattern = resource
    return f"ResourcePattern(resourceType={kind.name}, name={'<any>' if name is None else name}, " \
           f"patternType={pattern.name})"


def _entry(entry: tuple[str, str, AclOperation, AclPermissionType]) -> str:
    principal, host, operation, permission = entry
    return f"(principal={principal}, host={host}, operation={operation.name}, permissionType={permission.name})"


def _block(title: str, entries) -> str:
    lines = NL.join("\t" + _entry(e) for e in sorted(entries, key=lambda e: (e[0], e[1], e[2], e[3])))
    return f"{title}: {NL} {lines} {NL}"


def _additions(options: args_.AclOptions) -> dict:
    pattern = options.pattern_type
    if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise args_.UsageError(f"A '--resource-pattern-type' value of '{pattern.name}' is not valid when adding acls.")
    plan = args_.acls_by_resource(options)
    if any(not entries for entries in plan.values()):
        raise args_.UsageError("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
    return plan


async def add(client: AdminClient, plan: dict) -> None:
    for resource in sorted(plan, key=lambda r: (r[0], r[1], r[2])):
        entries = plan[resource]
        typer.echo(_block(f"Adding ACLs for resource `{_pattern(resource)}`", entries))
        await security.create_acls(client, [(int(resource[0]), resource[1], int(resource[2]), p, h, int(op),
                                              int(perm)) for p, h, op, perm in sorted(entries)])


def _confirm(options: args_.AclOptions, question: str) -> bool:
    if options.has("force"):
        return True
    typer.echo(question)
    return sys.stdin.readline().strip().lower() == "y"


async def remove(client: AdminClient, options: args_.AclOptions) -> None:
    plan = args_.acls_by_resource(options)
    for resource in sorted(plan, key=lambda r: (r[0], r[1], r[2])):
        entries = plan[resource]
        kind, name, pattern = resource
        if not entries:
            if _confirm(options, f"Are you sure you want to delete all ACLs for resource filter "
                                 f"`{_pattern(resource)}`? (y/n)"):
                await security.delete_acls(client, [(int(kind), name, int(pattern), None, None, 1, 1)])
        elif _confirm(options, _block("Are you sure you want to remove ACLs", entries)
                      + f" from resource filter `{_pattern(resource)}`? (y/n)"):
            await security.delete_acls(client, [(int(kind), name, int(pattern), p, h, int(op), int(perm))
                                                 for p, h, op, perm in sorted(entries)])


async def list_acls(client: AdminClient, options: args_.AclOptions) -> None:
    filters = args_.resource_filters(options, required=False)
    wanted: list[tuple[int, str | None, int, None, None, int, int]] = (
        [(int(k), n, int(p), None, None, 1, 1) for k, n, p in filters] or [(1, None, 1, None, None, 1, 1)])
    found: dict[tuple[ResourceType, str, PatternType], set] = {}
    for spec in wanted:
        answer = await security.describe_acls(client, spec)
        for resource in answer.resources:
            key = (ResourceType(int(resource.resource_type)), resource.resource_name,
                   PatternType(int(resource.pattern_type)))
            found.setdefault(key, set()).update(
                (a.principal, a.host, AclOperation(int(a.operation)), AclPermissionType(int(a.permission_type)))
                for a in resource.acls)
    principals = args_.principals(options, "principal") if options.has("principal") else None
    each: list[str | None] = list(principals) if principals else [None]
    for principal in each:
        if principal is not None:
            typer.echo(f"ACLs for principal `{principal}`")
        for resource in sorted(found, key=lambda r: (r[0], r[1], r[2])):
            entries = {e for e in found[resource] if principal is None or e[0] == principal}
            if entries:
                typer.echo(_block(f"Current ACLs for resource `{_pattern(resource)}`", entries))

