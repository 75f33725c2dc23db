"""Process logging: the standard `logging` records of every pykraft module, in Kafka's layout by default.

`pykraft.log.format`:
- `text` (the default): Kafka's log4j pattern `[%d] %p %m (%c)%n`, e.g.
  `[2026-11-28 14:00:00,123] INFO [RaftManager id=1] Completed transition to Leader(epoch=5, ...) (pykraft.node.quorum)`:
  local time with milliseconds, log4j's level names (WARN, FATAL for Python's WARNING, CRITICAL), the message, the
  logger; an exception's traceback follows on the next lines, as log4j prints a stack trace;
- `json`: one JSON object per line with `event` (the message), `level`, `logger`, `timestamp` (ISO-8601 UTC),
  `node_id` and `exception` (the traceback) when there is one: the keys and order structlog's JSONRenderer wrote
  (tests/node/test_logs.py compares the two), without importing structlog (~2 MiB of a server's idle RSS).
Lines go to stderr and, when a log directory is set, also to `<dir>/server.log` (Kafka's `kafka.logs.dir`, which
Kafka's scripts take from the `LOG_DIR` environment variable): `pykraft.logs.dir` in the properties, else
`LOG_DIR`. The file rolls every hour to `server.log.YYYY-MM-DD-HH`, as Kafka's `kafkaAppender` does (nothing deletes
old files, as in Kafka).
The level is INFO unless the environment variable PYKRAFT_LOG_LEVEL names another (DEBUG, WARNING, ...).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import sys
import traceback
from typing import Any

LOG_FILE = "server.log"
LOG_DIR_ENV = "LOG_DIR"  # Kafka's kafka-run-class.sh turns it into -Dkafka.logs.dir
_LOG4J_LEVELS = {"WARNING": "WARN", "CRITICAL": "FATAL"}


def level_from_environment(default: int = logging.INFO) -> int:
    """PYKRAFT_LOG_LEVEL as a logging level; `default` when unset or not a level name."""
    level = logging.getLevelName(os.environ.get("PYKRAFT_LOG_LEVEL", "").strip().upper())
    return level if isinstance(level, int) else default


class KafkaLayoutFormatter(logging.Formatter):
    """Kafka's `[%d] %p %m (%c)%n` (config/log4j.properties): `[2026-11-28 14:00:00,123] INFO message (logger)`."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = self.formatTime(record)  # local time, "%Y-%m-%d %H:%M:%S,mmm": log4j's %d
        level = _LOG4J_LEVELS.get(record.levelname, record.levelname)
        line = f"[{stamp}] {level} {record.getMessage()} ({record.name})"
        if record.exc_info and record.exc_info != (None, None, None):
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


# A line of the text layout: time, level, message, logger (a message may hold parentheses of its own).
TEXT_LINE = re.compile(r"\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>[A-Z]+) (?P<message>.*) "
                       r"\((?P<logger>[\w.]+)\)$")


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


def formatter_for(log_format: str, node_id: int) -> logging.Formatter:
    return JsonLineFormatter(node_id) if log_format == "json" else KafkaLayoutFormatter()


def logs_dir(configured: str | None) -> str | None:
    """Where server.log goes: the `pykraft.logs.dir` setting, else $LOG_DIR, else nowhere (stderr only)."""
    return configured or os.environ.get(LOG_DIR_ENV, "").strip() or None


def configure_logging(log_format: str, node_id: int, level: int | None = None,
                      directory: str | None = None) -> str | None:
    """stderr (and `<directory>/server.log`) in `log_format`; returns the log file's path, if any. OSError when
    the directory cannot be made or the file opened."""
    formatter = formatter_for(log_format, node_id)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    path = None
    if directory:
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, LOG_FILE)
        handlers.append(hourly_file_handler(path))
    for handler in handlers:
        handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = handlers
    root.setLevel(level_from_environment() if level is None else level)
    return path


def hourly_file_handler(path: str) -> logging.Handler:
    """Kafka's DailyRollingFileAppender with DatePattern '.'yyyy-MM-dd-HH: server.log, rolled to
    server.log.2026-11-28-14 at the end of each hour."""
    import logging.handlers  # only a node that writes a file loads it

    handler = logging.handlers.TimedRotatingFileHandler(path, when="H", encoding="utf-8")
    handler.suffix = "%Y-%m-%d-%H"
    handler.extMatch = re.compile(r"^\d{4}-\d{2}-\d{2}-\d{2}(\.\w+)?$", re.ASCII)
    return handler
