"""Process logging: the standard `logging` records of every pykraft module, rendered by structlog to stderr.

`json` (the default, `pykraft.log.format`) writes one JSON object per line with `timestamp` (ISO-8601 UTC),
`level`, `logger`, `node_id` and `event` (the message); `text` writes the same fields for a human. Modules keep
using `logging.getLogger(...)`: structlog only formats, so libraries' records come out the same way.
The level is INFO unless the environment variable PYKRAFT_LOG_LEVEL names another (DEBUG, WARNING, ...).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import structlog


def level_from_environment(default: int = logging.INFO) -> int:
    """PYKRAFT_LOG_LEVEL as a logging level; `default` when unset or not a level name."""
    level = logging.getLevelName(os.environ.get("PYKRAFT_LOG_LEVEL", "").strip().upper())
    return level if isinstance(level, int) else default


def configure_logging(log_format: str, node_id: int, level: int | None = None) -> None:
    def add_node_id(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
        event.setdefault("node_id", node_id)
        return event

    shared = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        add_node_id,
    ]
    renderer = (structlog.processors.JSONRenderer() if log_format == "json"
                else structlog.dev.ConsoleRenderer(colors=False))
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level_from_environment() if level is None else level)
