"""Dynamic configs of the metadata image (Kafka's ConfigurationControlManager): ConfigRecords in, requests answered.

State: (resource type, resource name) -> {config name: value}, rebuilt by replaying ConfigRecords (a null value
removes the key). A topic's configs go with the topic (`forget_topic` when its RemoveTopicRecord is replayed), as
Kafka's replay does.

Requests (pure; the hosts carry them out):
- IncrementalAlterConfigs (SET / DELETE / APPEND / SUBTRACT per key) and AlterConfigs (the resource's whole set is
  replaced) for TOPIC and BROKER resources: one ConfigRecord per changed key, nothing on validate_only. Topic
  configs are checked against Kafka's definitions (config_defs.py) on the resulting set; a topic that does not
  exist is UNKNOWN_TOPIC_OR_PARTITION. A broker name must be empty (the cluster default) or a node id, and the
  keys it sets are checked as Kafka checks dynamic broker configs, then refused where pykraft would not apply them
  without a restart (broker_configs.py). APPEND and SUBTRACT apply to LIST configs only.
- DescribeConfigs is answered by each node from its image and its own config (describe_configs.py).
- `unclean_election_enabled`: unclean.leader.election.enable of a topic as the controller resolves it (the topic's
  value, else the controller's own dynamic config, the cluster default, its server.properties, false).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kio.static.primitive import i8

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.config_record import ConfigRecordV0

from .broker_configs import BrokerConfigError, check_broker_changes, list_definition
from .config_defs import TOPIC_CONFIGS, ConfigType, check_topic_configs, parse_value
from .config_schema import effective_topic_config
from .result import ControllerResult

legacy_alter_response = schema_module("kio.schema.alter_configs.v2.response")
alter_response = schema_module("kio.schema.incremental_alter_configs.v1.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl

TOPIC, BROKER = 2, 4  # Kafka's ConfigResource.Type ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' OpType
CONFIG_RECORD = 4
REMOVE_TOPIC_RECORD = 9
Resource = tuple[int, str]


class ConfigError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class ConfigControl:
    def __init__(self) -> None:
        self.configs: dict[Resource, dict[str, str]] = {}

    # ---- replay -----------------------------------------------------------------------------------------------
    def replay(self, record: ConfigRecordV0) -> None:
        resource = (int(record.resource_type), record.resource_name)
        values = self.configs.setdefault(resource, {})
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value
        if not values:
            del self.configs[resource]

    def forget_topic(self, name: str) -> None:
        self.configs.pop((TOPIC, name), None)

    def replay_side(self, key: int, record: Any, replication: ReplicationControl) -> None:
        """The configs' part of replaying any record of api key `key`, called before `replication` replays it: a
        ConfigRecord is applied, a RemoveTopicRecord drops the topic's configs (while its name is still known)."""
        if key == CONFIG_RECORD:
            self.replay(record)
        elif key == REMOVE_TOPIC_RECORD:
            info = replication.topics.get(record.topic_id)
            if info is not None:
                self.forget_topic(info.name)

    def snapshot_records(self) -> Iterator[ConfigRecordV0]:
        for (kind, name), values in sorted(self.configs.items()):
            for key, value in sorted(values.items()):
                yield ConfigRecordV0(resource_type=i8(kind), resource_name=name, name=key, value=value)

    def of(self, resource_type: int, name: str) -> Mapping[str, str]:
        return self.configs.get((resource_type, name), {})

    # ---- changes ----------------------------------------------------------------------------------------------
    def incremental_alter(self, request: Any, replication: ReplicationControl) -> ControllerResult:
        return self._alter(request, replication, incremental=True)

    def alter(self, request: Any, replication: ReplicationControl) -> ControllerResult:
        return self._alter(request, replication, incremental=False)

    def _alter(self, request: Any, replication: ReplicationControl, *, incremental: bool) -> ControllerResult:
        records: list[ConfigRecordV0] = []
        results = []
        for resource in request.resources:
            kind, name = int(resource.resource_type), resource.resource_name
            try:
                changed = self._changed(kind, name, resource.configs, replication, incremental)
            except ConfigError as exc:
                results.append(_alter_result(kind, name, exc.code, exc.message))
                continue
            if not request.validate_only:
                records.extend(ConfigRecordV0(resource_type=i8(kind), resource_name=name, name=key, value=value)
                               for key, value in changed.items())
            results.append(_alter_result(kind, name, ErrorCode.NONE, None))
        return ControllerResult(records=tuple(records), response=alter_response_of(incremental, results))

    def _changed(self, kind: int, name: str, entries: Any, replication: ReplicationControl,
                 incremental: bool) -> dict[str, str | None]:
        """{key: new value or None (removed)} for one resource, checked; ConfigError when refused."""
        _check_resource(kind, name, replication)
        current = dict(self.of(kind, name))
        wanted: dict[str, str | None] = {} if incremental else {key: None for key in current}
        names = [entry.name for entry in entries]
        if len(set(names)) != len(names):
            raise ConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [entry.name for entry in entries if entry.value is None
                 and (not incremental or int(entry.config_operation) != DELETE)]
        if nulls:
            raise ConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
        for entry in entries:
            operation = int(entry.config_operation) if incremental else SET
            wanted[entry.name] = _apply(kind, entry.name, operation, entry.value, current.get(entry.name))
        if kind == TOPIC:
            resulting = {**current, **wanted}
            reason = check_topic_configs({k: v for k, v in resulting.items() if v is not None})
            if reason is not None:
                raise ConfigError(ErrorCode.INVALID_CONFIG, reason)
        else:
            try:
                check_broker_changes({k: v for k, v in wanted.items() if current.get(k) != v or v is None},
                                     per_broker=bool(name))
            except BrokerConfigError as exc:
                raise ConfigError(exc.code, exc.message) from None
        return {key: value for key, value in wanted.items() if current.get(key) != value}

    def unclean_election_enabled(self, topic: str, node_id: int, static: Mapping[str, str]) -> bool:
        definition = TOPIC_CONFIGS["unclean.leader.election.enable"]
        value, _ = effective_topic_config(definition, self.of(TOPIC, topic), self.of(BROKER, str(node_id)),
                                          self.of(BROKER, ""), static)
        return parse_value(definition, value or "false")[0] is True


def _check_resource(kind: int, name: str, replication: ReplicationControl) -> None:
    if kind == TOPIC:
        if name not in replication.topics_by_name:
            raise ConfigError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    elif kind == BROKER:
        if name:  # Kafka's ControllerConfigurationValidator.validateBrokerName
            try:
                broker_id = int(name, 10)
            except ValueError:
                raise ConfigError(ErrorCode.INVALID_REQUEST,
                                  "Unable to parse broker name as a base 10 number.") from None
            if broker_id < 0:
                raise ConfigError(ErrorCode.INVALID_REQUEST, "Invalid negative broker ID.")
    else:
        raise ConfigError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")


def _apply(kind: int, key: str, operation: int, value: str | None, current: str | None) -> str | None:
    if operation == SET:
        return value
    if operation == DELETE:
        return None
    if operation in (APPEND, SUBTRACT):
        definition = TOPIC_CONFIGS.get(key) if kind == TOPIC else list_definition(key)
        if definition is None or definition.type != ConfigType.LIST:
            verb = "append" if operation == APPEND else "subtract"
            raise ConfigError(ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {key}")
        base = current if current is not None else definition.default or ""
        items = [i.strip() for i in base.split(",") if i.strip()]
        given = [i.strip() for i in (value or "").split(",") if i.strip()]
        if operation == APPEND:
            items += [i for i in given if i not in items]
        else:
            items = [i for i in items if i not in given]
        return ",".join(items)
    raise ConfigError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {operation}")


def _alter_result(kind: int, name: str, code: ErrorCode, message: str | None) -> tuple[int, str, ErrorCode, str | None]:
    return kind, name, code, message


def alter_response_of(incremental: bool, results: list[tuple[int, str, ErrorCode, str | None]]) -> Any:
    """The (Incremental)AlterConfigs response (newest version) of per-resource (type, name, code, message)."""
    ns = alter_response if incremental else legacy_alter_response
    response_type = ns.IncrementalAlterConfigsResponse if incremental else ns.AlterConfigsResponse
    return response_type(throttle_time=ZERO_THROTTLE, responses=tuple(
        ns.AlterConfigsResourceResponse(error_code=code, error_message=message, resource_type=i8(kind),
                                        resource_name=name) for kind, name, code, message in results))

