"""Process logging: the standard `logging` records of every pykraft module, rendered by structlog to stderr.

`json` (the default, `pykraft.log.format`) writes one JSON object per line with `timestamp` (ISO-8601 UTC),
`level`, `logger`, `node_id` and `event` (the message); `text` writes the same fields for a human. Modules keep
using `logging.getLogger(...)`: structlog only formats, so libraries' records come out the same way.
The level is INFO unless the environment variable PYKRAFT_LOG_LEVEL names another (DEBUG, WARNING, ...).

The json form is written by `JsonLineFormatter` below, byte for byte what structlog's JSONRenderer behind its
ProcessorFormatter wrote here before (tests/node/test_logs.py compares the two): importing structlog costs a server
~2 MiB of idle RSS (it loads its dev, testing, twisted and traceback modules, pickle, ...), for one json.dumps.
structlog still renders the `text` form, imported only then.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
import traceback
from typing import Any


def level_from_environment(default: int = logging.INFO) -> int:
    """PYKRAFT_LOG_LEVEL as a logging level; `default` when unset or not a level name."""
    level = logging.getLevelName(os.environ.get("PYKRAFT_LOG_LEVEL", "").strip().upper())
    return level if isinstance(level, int) else default


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record: event, level, logger, timestamp (ISO-8601 UTC, "Z"), node_id, and exception (the
    formatted traceback) or stack_info when the record has them: the keys and order of structlog's json form."""

    def __init__(self, node_id: int) -> None:
        super().__init__()
        self.node_id = node_id

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {"event": record.getMessage()}
        if record.exc_info:
            event["exc_info"] = record.exc_info
        if record.stack_info:
            event["stack_info"] = record.stack_info
        level = record.levelname.lower()
        event["level"] = {"warn": "warning", "exception": "error"}.get(level, level)
        event["logger"] = record.name
        event["timestamp"] = datetime.datetime.now(tz=datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        event.setdefault("node_id", self.node_id)
        exc_info = event.pop("exc_info", None)
        if isinstance(exc_info, tuple) and exc_info != (None, None, None):
            event["exception"] = "".join(traceback.format_exception(*exc_info)).removesuffix("\n")
        return json.dumps(event, default=repr)


def configure_logging(log_format: str, node_id: int, level: int | None = None) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter(node_id) if log_format == "json" else text_formatter(node_id))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level_from_environment() if level is None else level)


def text_formatter(node_id: int) -> logging.Formatter:
    """structlog's ConsoleRenderer over the same fields as JsonLineFormatter."""
    import structlog

    def add_node_id(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
        event.setdefault("node_id", node_id)
        return event

    shared = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_node_id,
    ]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, structlog.dev.ConsoleRenderer(colors=False)],
    )
