"""DescribeConfigs and a node's own part of IncrementalAlterConfigs: its loggers (Kafka's BROKER_LOGGER resource).

- DescribeConfigs is answered by any node from its metadata image and its own config (controller/describe_configs.py:
  a node describes topics, the cluster default and itself); the node hands in its id, its server.properties and a
  view of its loggers.
- BROKER_LOGGER: the node's Python loggers with their effective levels under Kafka's level names (TRACE, DEBUG,
  INFO, WARN, ERROR, FATAL; `root` is the root logger). IncrementalAlterConfigs changes them on the node that
  receives the request, at once and until the process ends (Kafka does not persist them either), with Kafka's
  RuntimeLoggerManager checks: the resource names this node, SET a known logger to a valid level, DELETE (back to
  the parent's level) any logger but root; APPEND and SUBTRACT are INVALID_REQUEST. The other resources of the
  request go on as before (to the controller) and the answers are put back together in the request's order.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pykraft.controller.configs import alter_response_of
from pykraft.controller.describe_configs import BROKER_LOGGER, NodeView, describe_configs
from pykraft.protocol.errors import ErrorCode

from pykraft.protocol.core_versions import to_request_version

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

_log = logging.getLogger("pykraft.node.configs")
Handler = Callable[["DecodedRequest"], Awaitable[Any]]

ROOT = "root"
# Kafka's level names and the Python levels they stand for (Python has no TRACE: one below DEBUG).
TRACE = 5
_TO_PYTHON = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
VALID_LEVELS = ", ".join(sorted(_TO_PYTHON))
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def node_view(node_id: int, static: Mapping[str, str]) -> NodeView:
    return NodeView(node_id, static, loggers)


def describe_handler(image_of: Callable[[], Any], view: NodeView) -> Handler:
    """DescribeConfigs over `image_of()` (a QuorumController or a MetadataCache: `.configs`, `.replication`)."""
    async def describe(decoded: DecodedRequest) -> Any:
        image = image_of()
        response = describe_configs(image.configs, lambda name: name in image.replication.topics_by_name,
                                    decoded.message, view)
        return to_request_version(response, int(decoded.message.__version__))
    return describe


def kafka_level(level: int) -> str:
    for name, value in sorted(_TO_PYTHON.items(), key=lambda item: -item[1]):
        if level >= value:
            return name
    return "TRACE"


def loggers() -> dict[str, str]:
    """Every logger of this process (and root) with its effective level, in Kafka's names."""
    found = {ROOT: kafka_level(logging.getLogger().getEffectiveLevel())}
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            found[name] = kafka_level(logger.getEffectiveLevel())
    return found


def _logger_exists(name: str) -> bool:
    return name == ROOT or isinstance(logging.root.manager.loggerDict.get(name), logging.Logger)


def _check_logger_change(entry: Any) -> tuple[ErrorCode, str] | None:
    name, operation = entry.name, int(entry.config_operation)
    if operation in (APPEND, SUBTRACT):
        op = "APPEND" if operation == APPEND else "SUBTRACT"
        return ErrorCode.INVALID_REQUEST, f"{op} operation is not allowed for the BROKER_LOGGER resource"
    if operation not in (SET, DELETE):
        return (ErrorCode.INVALID_REQUEST,
                f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER resource")
    if not _logger_exists(name):
        return ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!"
    if operation == SET and entry.value not in _TO_PYTHON:
        return (ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {name} to {entry.value} as it is not a "
                                          f"supported log level. Valid log levels are {VALID_LEVELS}")
    if operation == DELETE and name == ROOT:
        return ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
    return None


def change_loggers(resource: Any, node_id: int, validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Apply one BROKER_LOGGER resource of IncrementalAlterConfigs on this node; its (error, message)."""
    try:
        requested = int(resource.resource_name)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource.resource_name}"
    if requested != node_id:
        return ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {requested}"
    for entry in resource.configs:
        refusal = _check_logger_change(entry)
        if refusal is not None:
            return refusal
    if not validate_only:
        for entry in resource.configs:
            logger = logging.getLogger() if entry.name == ROOT else logging.getLogger(entry.name)
            if int(entry.config_operation) == SET:
                logger.setLevel(_TO_PYTHON[entry.value])
                _log.warning("Updated the log level of %s to %s", entry.name, entry.value)
            else:
                logger.setLevel(logging.NOTSET)
                _log.warning("Unset the log level of %s", entry.name)
    return ErrorCode.NONE, None


def with_logger_changes(inner: Handler, node_id: int) -> Handler:
    """IncrementalAlterConfigs: BROKER_LOGGER resources answered here, the others by `inner`."""
    async def handle(decoded: DecodedRequest) -> Any:
        message = decoded.message
        mine = [r for r in message.resources if int(r.resource_type) == BROKER_LOGGER]
        if not mine:
            return await inner(decoded)
        local = {id(r): change_loggers(r, node_id, bool(message.validate_only)) for r in mine}
        others = tuple(r for r in message.resources if int(r.resource_type) != BROKER_LOGGER)
        answered: dict[tuple[int, str], tuple[ErrorCode, str | None]] = {}
        if others:
            rest = dataclasses.replace(decoded, message=dataclasses.replace(message, resources=others))
            response = await inner(rest)
            answered = {(int(r.resource_type), r.resource_name): (ErrorCode(int(r.error_code)), r.error_message)
                        for r in response.responses}
        results = []
        for resource in message.resources:
            kind, name = int(resource.resource_type), resource.resource_name
            code, text = local.get(id(resource)) or answered.get(
                (kind, name), (ErrorCode.UNKNOWN_SERVER_ERROR, "no answer for this resource"))
            results.append((kind, name, code, text))
        return to_request_version(alter_response_of(True, results), int(message.__version__))
    return handle

