"""`pykraft configs`: Kafka's kafka-configs (ConfigCommand): a kafka-configs.sh line runs with `pykraft configs` in
its place, with Kafka's flags (configs_args.py), output lines and exit codes.

- `--describe`: per entity, `Dynamic configs for topic t are:` (`All configs ...` with --all, `Default configs for
  brokers in the cluster are:` for the cluster default), then `  key=value sensitive=false synonyms={SOURCE:key=value,
  ...}` per config, by name: the dynamic ones (source DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG or
  DYNAMIC_DEFAULT_BROKER_CONFIG) or, with --all, every one. Without a name: every topic, or every node and then the
  cluster default. Broker loggers are all listed.
- `--alter`: the entity's dynamic configs are read first (a `--delete-config` key that is not set is refused:
  `Invalid config(s): k`), then one IncrementalAlterConfigs (deletions, then --add-config or --add-config-file
  entries as SET), then `Completed updating config for topic t.` / `Completed updating default config for brokers
  in the cluster.`.
- users: SCRAM credentials (`--describe`: `SCRAM credential configs for user-principal 'alice' are
  SCRAM-SHA-256=iterations=8192`; `--alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=pw]'` and
  `--delete-config SCRAM-SHA-256`: AlterUserScramCredentials with a fresh salt and the salted password, as Kafka's
  admin client sends it). Quotas (users, clients, ips) get Kafka's answer from a cluster without quota APIs.
A refusal is one stderr line and exit 1: Kafka's own message for what the tool checks itself (usage, `Invalid
config(s)`), else Kafka's `Error while executing config command with args '...'` followed by the server's error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import typer

from pykraft.admin import configs as cfg
from pykraft.admin import security
from pykraft.admin.client import AdminClient
from pykraft.admin.connect import SettingsError, read_command_config
from pykraft.admin.errors import AdminError
from pykraft.protocol.errors import ErrorCode

from . import configs_args as args_
from .metadata_quorum_cmd import Connection, ToolFailure, run_admin

EXIT_FAILURE = 1
RESOURCE = {args_.TOPICS: cfg.TOPIC, args_.BROKERS: cfg.BROKER, args_.BROKER_LOGGERS: cfg.BROKER_LOGGER,
            args_.GROUPS: 32, args_.CLIENT_METRICS: 16}
# The source a plain --describe shows (Kafka's getResourceConfig); None: every entry
_DYNAMIC = {args_.TOPICS: 1, args_.GROUPS: 8, args_.CLIENT_METRICS: 7, args_.BROKER_LOGGERS: None}
# Kafka's exception of an error code, as its admin client raises it, and its message when the answer has none
_EXCEPTIONS = {
    ErrorCode.INVALID_CONFIG: ("InvalidConfigurationException", "Configuration is invalid."),
    ErrorCode.INVALID_REQUEST: ("InvalidRequestException", "This most likely occurs because of a request being "
                                "malformed by the client library or the message was sent to an incompatible broker. "
                                "See the broker logs for more details."),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ("UnknownTopicOrPartitionException",
                                           "This server does not host this topic-partition."),
    ErrorCode.INVALID_TOPIC_EXCEPTION: ("InvalidTopicException",
                                        "The request attempted to perform an operation on an invalid topic."),
    ErrorCode.POLICY_VIOLATION: ("PolicyViolationException", "Request parameters do not satisfy the configured "
                                                            "policy."),
    ErrorCode.UNSUPPORTED_VERSION: ("UnsupportedVersionException", "The version of API is not supported."),
    ErrorCode.BROKER_NOT_AVAILABLE: ("BrokerNotAvailableException", "The broker is not available."),
    ErrorCode.UNACCEPTABLE_CREDENTIAL: ("UnacceptableCredentialException", "Requested credential would not meet "
                                        "criteria for acceptability."),
    ErrorCode.RESOURCE_NOT_FOUND: ("ResourceNotFoundException", "A request illegally referred to a resource that "
                                   "does not exist."),
    ErrorCode.DUPLICATE_RESOURCE: ("DuplicateResourceException", "A request illegally referred to the same resource "
                                   "twice."),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: ("ClusterAuthorizationException", "Cluster authorization failed."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: ("TopicAuthorizationException", "Topic authorization failed."),
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: ("UnsupportedSaslMechanismException", "The broker does not support the "
                                           "requested SASL mechanism."),
}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_SCRAM_ITERATIONS = 4096
USAGE = ("Usage: pykraft configs --bootstrap-server H:P | --bootstrap-controller H:P [--command-config FILE] "
         "--entity-type topics|brokers|broker-loggers (--entity-name N | --entity-default) "
         "--describe [--all] | --alter (--add-config k=v,k2=[a,b] | --add-config-file FILE) [--delete-config k]")


class KafkaLine(Exception):
    """One stderr line, exit 1."""


def run(argv: Sequence[str]) -> int:
    if not argv:  # Kafka's tools print their usage and fail when given nothing
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
        conn = Connection(options.value("bootstrap-controller"), options.value("bootstrap-server"),
                          Path(str(options.value("command-config"))) if options.has("command-config") else None)
        if options.has("alter"):
            lines = _admin(conn, argv, lambda client: alter(client, options))
        else:
            lines = _admin(conn, argv, lambda client: describe(client, options))
    except (args_.UsageError, KafkaLine) as failure:
        typer.echo(str(failure), err=True)
        return EXIT_FAILURE
    for line in lines:
        typer.echo(line)
    return 0


def _admin(conn: Connection, argv: Sequence[str], operation) -> list[str]:
    async def guarded(client: AdminClient) -> list[str]:
        try:
            return await operation(client)
        except AdminError as exc:
            name, default = _EXCEPTIONS.get(exc.code, (exc.code.name, exc.code.name))
            raise KafkaLine(f"{_executing(argv)}: {name}: {exc.message or default}") from None

    try:
        return run_admin(conn, guarded)
    except ToolFailure as failure:
        raise KafkaLine(f"{_executing(argv)}: {' '.join(str(failure).split())}") from None


def _executing(argv: Sequence[str]) -> str:
    return f"Error while executing config command with args '{' '.join(argv)}'"


def _unsupported() -> AdminError:
    """Kafka's answer for quotas and SCRAM credentials (users, clients, ips) from a cluster without their APIs:
    DescribeClientQuotas is the first request both --describe and --alter send."""
    return AdminError(ErrorCode.UNSUPPORTED_VERSION, "The node does not support DESCRIBE_CLIENT_QUOTAS")


# ---- describe --------------------------------------------------------------------------------------------------
async def describe(client: AdminClient, options: args_.Options) -> list[str]:
    kind = options.entity_types[0]
    if kind == args_.USERS and len(options.entity_types) == 1:
        return await describe_users(client, options.entity_names)
    if kind not in RESOURCE:
        raise _unsupported()
    names = options.entity_names
    everything = options.has("all")
    if names:
        entities = names[:1]
    elif kind == args_.TOPICS:
        entities = [t.name for t in await client.describe_topics()]
    elif kind == args_.BROKERS:
        entities = [str(n.node_id) for n in (await client.describe_cluster()).nodes] + [""]
    else:
        raise KafkaLine(f"Invalid entity type: {kind}")
    lines = []
    for entity in entities:
        if entity == "":
            lines.append(f"Default configs for {kind} in the cluster are:")
        else:
            lines.append(f"{'All' if everything else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
        for entry in await _resource_configs(client, kind, entity, everything, synonyms=True):
            lines.append(entry_line(entry))
    return lines


async def _resource_configs(client: AdminClient, kind: str, name: str, everything: bool,
                            synonyms: bool) -> list[cfg.ConfigEntry]:
    if kind == args_.BROKERS:
        wanted: int | None = 3 if name == "" else 2  # DYNAMIC_DEFAULT_BROKER_CONFIG / DYNAMIC_BROKER_CONFIG
    else:
        wanted = _DYNAMIC.get(kind)
    entries = await client.describe_configs(RESOURCE[kind], name, include_synonyms=synonyms)
    chosen = [e for e in entries if everything or wanted is None or e.source == wanted]
    return sorted(chosen, key=lambda e: e.name)


def _text(value: str | None) -> str:
    return "null" if value is None else value


def entry_line(entry: cfg.ConfigEntry) -> str:
    synonyms = ", ".join(f"{cfg.SOURCE_NAMES.get(s.source, 'UNKNOWN')}:{s.name}={_text(s.value)}"
                         for s in entry.synonyms)
    return (f"  {entry.name}={_text(entry.value)} sensitive={str(entry.sensitive).lower()} "
            f"synonyms={{{synonyms}}}")


# ---- alter -----------------------------------------------------------------------------------------------------
def configs_to_add(options: args_.Options) -> dict[str, str]:
    found: dict[str, str] = {}
    path = options.value("add-config-file")
    if path is not None:
        try:
            found.update(read_command_config(Path(path)))
        except SettingsError as exc:
            raise KafkaLine(str(exc)) from None
        args_.check_keys(found)
    text = options.value("add-config")
    if text is not None:
        found.update(args_.parse_add_config(text))
    return found


async def alter(client: AdminClient, options: args_.Options) -> list[str]:
    kind, name = options.entity_types[0], options.entity_names[0]
    to_add, to_delete = configs_to_add(options), options.delete_configs
    if kind == args_.USERS and len(options.entity_types) == 1 and (
            any(k in SCRAM_MECHANISMS for k in to_add) or any(k in SCRAM_MECHANISMS for k in to_delete)):
        return await alter_user(client, name, to_add, to_delete)
    if kind not in RESOURCE:
        raise _unsupported()
    if kind == args_.BROKER_LOGGERS:
        valid = {e.name for e in await client.describe_configs(cfg.BROKER_LOGGER, name)}
        invalid = [k for k in to_delete if k not in valid] + [k for k in to_add if k not in valid]
        if invalid:
            raise KafkaLine(f"Invalid broker logger(s): {','.join(invalid)}")
    else:
        old = {e.name for e in await _resource_configs(client, kind, name, False, synonyms=False)}
        invalid = [k for k in to_delete if k not in old]
        if invalid:
            raise KafkaLine(f"Invalid config(s): {','.join(invalid)}")
    changes = [(k, cfg.DELETE, "") for k in to_delete] + [(k, cfg.SET, v) for k, v in to_add.items()]
    await client.alter_configs(RESOURCE[kind], name, changes)
    if name:
        return [f"Completed updating config for {kind[:-1]} {name}."]
    return [f"Completed updating default config for {kind} in the cluster."]


# ---- users: SCRAM credentials ----------------------------------------------------------------------------------
async def describe_users(client: AdminClient, names: list[str]) -> list[str]:
    """Kafka's describeClientQuotaAndUserScramCredentialConfigs, SCRAM part (pykraft keeps no quotas)."""
    if "" in names:
        return []  # --entity-default: quotas only in Kafka
    answer = await security.describe_scram(client, names or None)
    lines = []
    for result in answer.results:
        code = ErrorCode(int(result.error_code))
        if code != ErrorCode.NONE:
            exception = _EXCEPTIONS.get(code, (code.name, code.name))[0]
            lines.append(f"Error retrieving SCRAM credential configs for user-principal '{result.user}': "
                         f"{exception}: {result.error_message}")
            continue
        infos = ", ".join(f"{SCRAM_MECHANISMS[int(i.mechanism) - 1]}=iterations={int(i.iterations)}"
                          for i in result.credential_infos)
        lines.append(f"SCRAM credential configs for user-principal '{result.user}' are {infos}")
    return lines


def _iterations_and_password(mechanism: str, text: str) -> tuple[int, str]:
    """Kafka's iterationsAndPasswordBytes: `[iterations=N,]password=P`."""
    match = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", text, re.DOTALL)
    if match is None:
        raise KafkaLine(f"Invalid credential property {mechanism}={text}")
    iterations = match.group(1)
    count = int(iterations) if iterations not in (None, "", "-1") else DEFAULT_SCRAM_ITERATIONS
    if count < 4096:
        raise KafkaLine(f"Iterations {count} is less than the minimum 4096 required for {mechanism}")
    return count, match.group(2)


async def alter_user(client: AdminClient, user: str, to_add: dict[str, str], to_delete: list[str]) -> list[str]:
    unknown_add = [k for k in to_add if k not in SCRAM_MECHANISMS]
    unknown_delete = [k for k in to_delete if k not in SCRAM_MECHANISMS]
    if unknown_add:
        raise KafkaLine("Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. "
                        f"Unexpected config names: Set({', '.join(unknown_add)})")
    if unknown_delete:
        raise KafkaLine("Only quota and SCRAM credential configs can be deleted for 'users' using "
                        f"--bootstrap-server. Unexpected config names: Set({', '.join(unknown_delete)})")
    if not user:
        raise KafkaLine("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials "
                        "using --bootstrap-server.")
    upsertions = [(user, mechanism, *_iterations_and_password(mechanism, text)) for mechanism, text in to_add.items()]
    await security.alter_scram(client, [(user, m) for m in to_delete], upsertions)
    return [f"Completed updating config for user {user}."]
