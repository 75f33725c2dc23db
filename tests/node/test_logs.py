"""The json log lines (node/logs.py's JsonLineFormatter) are what structlog's JSONRenderer wrote before it was
replaced there to keep structlog out of a server's memory: same keys, order and values, exceptions included."""

from __future__ import annotations

import json
import logging
import re
import sys

import structlog

from pykraft.node.logs import JsonLineFormatter, configure_logging

NODE_ID = 7


def structlog_json_formatter(node_id: int) -> logging.Formatter:
    """The formatter node/logs.py configured for `pykraft.log.format=json` until structlog was dropped there."""

    def add_node_id(_logger, _method, event):
        event.setdefault("node_id", node_id)
        return event

    shared = [structlog.stdlib.add_log_level, structlog.stdlib.add_logger_name,
              structlog.processors.TimeStamper(fmt="iso", utc=True), add_node_id]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, structlog.processors.JSONRenderer()])


def records() -> list[logging.LogRecord]:
    made = [logging.LogRecord("pykraft.node", logging.INFO, __file__, 1, "node %d is the active controller of %s",
                              (1, "epoch 3"), None),
            logging.LogRecord("pykraft.net.server", logging.WARNING, __file__, 2, 'a "quoted" \u00e9vent\nline 2',
                              (), None),
            logging.LogRecord("x", logging.CRITICAL, __file__, 3, "stack", (), None, sinfo="Stack (most recent)")]
    try:
        raise ValueError("bad frame")
    except ValueError:
        made.append(logging.LogRecord("pykraft.node", logging.ERROR, __file__, 4, "failed: %r", (KeyError(1),),
                                      sys.exc_info()))
    made.append(logging.LogRecord("y", logging.DEBUG, __file__, 5, "no exception", (), (None, None, None)))
    return made


def without_time(line: str) -> str:
    return re.sub(r'"timestamp": "[^"]+"', '"timestamp": "T"', line)


def test_json_lines_are_the_ones_structlog_wrote():
    ours, theirs = JsonLineFormatter(NODE_ID), structlog_json_formatter(NODE_ID)
    for record in records():
        expected = theirs.format(logging.makeLogRecord(record.__dict__))
        assert without_time(ours.format(logging.makeLogRecord(record.__dict__))) == without_time(expected)


def test_a_json_line_carries_an_iso_utc_timestamp_and_the_traceback():
    line = json.loads(JsonLineFormatter(NODE_ID).format(records()[3]))
    assert list(line) == ["event", "level", "logger", "timestamp", "node_id", "exception"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", line["timestamp"])
    assert line["exception"].startswith("Traceback") and line["exception"].endswith("ValueError: bad frame")


def test_configure_logging_picks_the_formatter_of_the_format():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("json", NODE_ID, logging.INFO)
        assert isinstance(root.handlers[0].formatter, JsonLineFormatter)
        configure_logging("text", NODE_ID, logging.INFO)
        text = root.handlers[0].formatter.format(records()[0])
        assert "node 1 is the active controller of epoch 3" in text and "node_id=7" in text
    finally:
        root.handlers[:], root.level = saved
