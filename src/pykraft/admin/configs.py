"""Config requests of the admin client (DescribeConfigs v4, IncrementalAlterConfigs v1) and reading their answers.

Where a request goes is Kafka's admin client's rule (KafkaAdminClient.describeConfigs / incrementalAlterConfigs):
a BROKER resource naming a broker id and a BROKER_LOGGER resource go to that node (it describes and changes only
itself); a topic or the cluster default go to any node (a broker forwards changes to the active controller).
`node_for` says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.describe_configs.v4 import request as dc_req
from kio.schema.incremental_alter_configs.v1 import request as iac_req
from kio.static.primitive import i8

from pykraft.protocol.errors import ErrorCode

from .model import error_code_of
from .responses import Outcome

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8  # Kafka's ConfigResource.Type ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs' operations
# DescribeConfigs' ConfigSource ids, named as Kafka's ConfigEntry.ConfigSource prints them
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a described resource (Kafka's ConfigEntry)."""

    name: str
    value: str | None
    source: int
    sensitive: bool
    read_only: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    documentation: str | None = None


def node_for(kind: int, name: str) -> int | None:
    """The node id a request about this resource must go to, None for any node."""
    if kind == BROKER_LOGGER or (kind == BROKER and name):
        return int(name)
    return None


def describe_request(kind: int, name: str, include_synonyms: bool, include_documentation: bool = False,
                     keys: Iterable[str] | None = None) -> dc_req.DescribeConfigsRequest:
    return dc_req.DescribeConfigsRequest(resources=(dc_req.DescribeConfigsResource(
        resource_type=i8(kind), resource_name=name, configuration_keys=None if keys is None else tuple(keys)),),
        include_synonyms=include_synonyms, include_documentation=include_documentation)


def describe_outcome(response: Any) -> Outcome:
    (result,) = response.results
    return Outcome(error_code_of(result.error_code), result.error_message)


def entries_of(response: Any) -> list[ConfigEntry]:
    (result,) = response.results
    return [ConfigEntry(c.name, c.value, int(c.config_source), bool(c.is_sensitive), bool(c.read_only),
                        tuple(ConfigSynonym(s.name, s.value, int(s.source)) for s in c.synonyms), c.documentation)
            for c in result.configs]


def alter_request(kind: int, name: str, changes: Iterable[tuple[str, int, str | None]],
                  validate_only: bool = False) -> iac_req.IncrementalAlterConfigsRequest:
    """`changes`: (key, operation, value) in the order they are applied."""
    return iac_req.IncrementalAlterConfigsRequest(resources=(iac_req.AlterConfigsResource(
        resource_type=i8(kind), resource_name=name, configs=tuple(
            iac_req.AlterableConfig(name=key, config_operation=i8(op), value=value) for key, op, value in changes)),),
        validate_only=validate_only)


def alter_outcome(response: Any) -> Outcome:
    if len(response.responses) != 1:
        return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"expected one resource, got {len(response.responses)}")
    (result,) = response.responses
    return Outcome(error_code_of(result.error_code), result.error_message)
