"""Topic config and partition-count requests of the admin client, and reading their answers.

- DescribeConfigs v4 for topics: each topic's configs whose source is not Kafka's default (what kafka-topics
  prints after `Configs:`), in the order the server lists them.
- CreatePartitions v3 for one topic: the new count and, optionally, the new partitions' replicas.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.create_partitions.v3 import request as cp_req
from kio.schema.describe_configs.v4 import request as dc_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode

from .errors import TopicError
from .model import error_code_of
from .responses import Outcome

TOPIC_RESOURCE = 2
DEFAULT_CONFIG_SOURCE = 5


def describe_configs_request(names: Iterable[str]) -> dc_req.DescribeConfigsRequest:
    return dc_req.DescribeConfigsRequest(resources=tuple(
        dc_req.DescribeConfigsResource(resource_type=i8(TOPIC_RESOURCE), resource_name=name, configuration_keys=None)
        for name in names), include_synonyms=False, include_documentation=False)


def overridden_configs(response: Any) -> tuple[dict[str, list[tuple[str, str | None]]], list[TopicError]]:
    """{topic: [(name, value)] of its non-default configs} and the per-topic errors."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    errors = []
    for result in response.results:
        code = error_code_of(result.error_code)
        if code != ErrorCode.NONE:
            errors.append(TopicError(result.resource_name, code, result.error_message))
            continue
        found[result.resource_name] = [(c.name, c.value) for c in result.configs
                                       if int(c.config_source) != DEFAULT_CONFIG_SOURCE]
    return found, errors


def create_partitions_request(name: str, count: int, assignment: Sequence[Sequence[int]] | None,
                              timeout_ms: int) -> cp_req.CreatePartitionsRequest:
    assignments = None if assignment is None else tuple(
        cp_req.CreatePartitionsAssignment(broker_ids=tuple(BrokerId(b) for b in replicas)) for replicas in assignment)
    return cp_req.CreatePartitionsRequest(
        topics=(cp_req.CreatePartitionsTopic(name=TopicName(name), count=i32(count), assignments=assignments),),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)), validate_only=False)


def create_partitions_outcome(response: Any) -> Outcome:
    if len(response.results) != 1:
        return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"expected one topic result, got {len(response.results)}")
    result = response.results[0]
    return Outcome(error_code_of(result.error_code), result.error_message)
