"""node/logs.py: the default text lines are Kafka's log4j layout `[%d] %p %m (%c)%n`; the json lines (a setting) are
what structlog's JSONRenderer wrote before it was replaced there to keep structlog out of a server's memory: same
keys, order and values, exceptions included; `server.log` goes where `pykraft.logs.dir` or LOG_DIR say."""

from __future__ import annotations

import json
import logging
import re
import sys

import structlog

from pykraft.node.logs import (LOG_FILE, TEXT_LINE, JsonLineFormatter, KafkaLayoutFormatter, configure_logging,
                               logs_dir)

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


# Kafka's config/log4j.properties: log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n, with %d in
# log4j's ISO8601 form "yyyy-MM-dd HH:mm:ss,SSS" (local time).
KAFKA_LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) .+ \([\w.]+\)")


def test_the_text_layout_is_kafkas():
    formatter = KafkaLayoutFormatter()
    info, warning, critical, error, debug = records()[0], records()[1], records()[2], records()[3], records()[4]
    line = formatter.format(info)
    assert KAFKA_LINE.fullmatch(line), line
    assert line.endswith("] INFO node 1 is the active controller of epoch 3 (pykraft.node)")
    assert TEXT_LINE.match(line)["message"] == "node 1 is the active controller of epoch 3"
    assert " WARN " in formatter.format(warning) and " FATAL " in formatter.format(critical)
    assert " DEBUG no exception (y)" in formatter.format(debug)
    with_trace = formatter.format(error).splitlines()
    assert KAFKA_LINE.fullmatch(with_trace[0]) and with_trace[0].endswith("ERROR failed: KeyError(1) (pykraft.node)")
    assert with_trace[1].startswith("Traceback") and with_trace[-1] == "ValueError: bad frame"


def test_configure_logging_picks_the_formatter_of_the_format():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("json", NODE_ID, logging.INFO)
        assert isinstance(root.handlers[0].formatter, JsonLineFormatter)
        configure_logging("text", NODE_ID, logging.INFO)
        assert isinstance(root.handlers[0].formatter, KafkaLayoutFormatter) and len(root.handlers) == 1
    finally:
        root.handlers[:], root.level = saved


def test_a_log_directory_gets_server_log_rolled_hourly_as_kafkas(tmp_path):
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        path = configure_logging("text", NODE_ID, logging.INFO, directory=str(tmp_path / "logs"))
        assert path == str(tmp_path / "logs" / LOG_FILE)
        logging.getLogger("pykraft.node").info("written to %s", "both")
        for handler in root.handlers:
            handler.flush()
        (line,) = (tmp_path / "logs" / LOG_FILE).read_text().splitlines()
        assert KAFKA_LINE.fullmatch(line) and "INFO written to both (pykraft.node)" in line
        rolling = root.handlers[1]
        assert rolling.suffix == "%Y-%m-%d-%H" and rolling.extMatch.match("2026-11-28-14")  # server.log.2026-11-28-14
    finally:
        for handler in root.handlers[1:]:
            handler.close()
        root.handlers[:], root.level = saved


def test_the_setting_comes_before_log_dir_in_the_environment(monkeypatch):
    monkeypatch.delenv("LOG_DIR", raising=False)
    assert logs_dir(None) is None
    monkeypatch.setenv("LOG_DIR", "/var/log/kafka")
    assert logs_dir(None) == "/var/log/kafka"
    assert logs_dir("/srv/pykraft/logs") == "/srv/pykraft/logs"
