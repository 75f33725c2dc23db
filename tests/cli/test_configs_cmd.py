"""`pykraft configs` without a cluster: Kafka's ConfigCommand checks of the command line, Kafka's reading of
--add-config, the output lines, and the node's broker-logger changes (node/apis/configs_api.py)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from pykraft.admin.configs import ConfigEntry, ConfigSynonym
from pykraft.cli import configs_args as args
from pykraft.cli.configs_cmd import entry_line, run
from pykraft.node.apis import configs_api
from pykraft.protocol.errors import ErrorCode

B = ["--bootstrap-server", "127.0.0.1:9092"]


@pytest.mark.parametrize(("line", "message"), [
    ([*B, "--entity-type", "topics"], "Command must include exactly one action: --describe, --alter"),
    ([*B, "--entity-type", "topics", "--describe", "--add-config", "a=1"],
     'Option "[describe]" can\'t be used with option "[add-config]"'),
    (["--entity-type", "topics", "--describe"], "Either --bootstrap-server or --bootstrap-controller must be "
                                                "specified."),
    ([*B, "--entity-type", "cats", "--describe"],
     "Invalid entity type cats, the entity type must be one of topics, clients, users, brokers, ips, client-metrics, "
     "groups, broker-loggers with a --bootstrap-server or --bootstrap-controller argument"),
    ([*B, "--describe"], "At least one entity type must be specified"),
    ([*B, "--entity-type", "topics", "--entity-type", "brokers", "--describe"],
     "Only 'users' and 'clients' entity types may be specified together"),
    ([*B, "--entity-name", "x", "--topic", "t", "--describe"],
     "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
    ([*B, "--bootstrap-controller", "h:1", "--entity-type", "topics", "--describe"],
     "Only one of --bootstrap-server or --bootstrap-controller can be specified"),
    ([*B, "--broker", "one", "--describe"], "The entity name for brokers must be a valid integer broker id, but it "
                                            "is: one"),
    ([*B, "--entity-type", "topics", "--entity-default", "--describe"],
     "--entity-default must not be specified with --describe of topics"),
    ([*B, "--entity-type", "broker-loggers", "--describe"],
     "An entity name must be specified with --describe of broker-loggers"),
    ([*B, "--entity-type", "brokers", "--alter", "--add-config", "a=1"],
     "An entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    ([*B, "--entity-type", "topics", "--alter", "--add-config", "a=1"],
     "An entity name must be specified with --alter of topics"),
    ([*B, "--topic", "t", "--alter"], "At least one of --add-config, --add-config-file, or --delete-config must be "
                                      "specified with --alter"),
    ([*B, "--topic", "t", "--alter", "--add-config", "a=1", "--add-config-file", "f"],
     "Only one of --add-config or --add-config-file must be specified"),
    ([*B, "--topic", "t", "--describe", "--colour"], "colour is not a recognized option"),
    ([*B, "--topic"], "Option topic requires an argument"),
    ([*B, "--topic", "t", "--alter", "--add-config", "a=1=2"], args.BAD_ENTRY),
    ([*B, "--topic", "t", "--alter", "--add-config", "a b=1"], "Invalid character found for config key: a b"),
])
def test_a_command_line_kafka_refuses_is_one_stderr_line_and_exit_1(capsys, line, message):
    assert run(line) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == message + "\n"


def test_entity_names_follow_kafkas_order_of_flags():
    options = args.parse([*B, "--entity-type", "users", "--entity-default", "--entity-type", "clients",
                          "--entity-name", "c1", "--describe"])
    assert options.entity_types == ["users", "clients"] and options.entity_names == ["", "c1"]
    shortcut = args.parse([*B, "--broker-defaults", "--alter", "--delete-config", "a,b", "--delete-config", " c"])
    assert (shortcut.entity_types, shortcut.entity_names, shortcut.delete_configs) == (
        ["brokers"], [""], ["a", "b", "c"])
    inline = args.parse(["--bootstrap-server=h:1", "--entity-type=brokers", "--entity-name=1", "--describe", "--all"])
    assert inline.value("bootstrap-server") == "h:1" and inline.has("all")


def test_add_config_reads_brackets_and_spaces_as_kafka_does():
    assert args.parse_add_config("k1=v1,k2=[v1,v2,v2],k3 = v3") == {"k1": "v1", "k2": "v1,v2,v2", "k3": "v3"}
    assert args.parse_add_config("ssl.endpoint.identification.algorithm=") == {
        "ssl.endpoint.identification.algorithm": ""}
    with pytest.raises(args.UsageError):
        args.parse_add_config("novalue")


def test_an_entry_prints_as_kafka_configs_prints_it():
    entry = ConfigEntry("log.retention.ms", "1000", 3, False, False, (
        ConfigSynonym("log.retention.ms", "1000", 3), ConfigSynonym("log.retention.hours", "168", 5)))
    assert entry_line(entry) == ("  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                                 "log.retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}")
    secret = ConfigEntry("ssl.key.password", None, 4, True, True, (ConfigSynonym("ssl.key.password", None, 4),))
    assert entry_line(secret) == ("  ssl.key.password=null sensitive=true synonyms={STATIC_BROKER_CONFIG:"
                                  "ssl.key.password=null}")


def _logger_change(name, *ops):
    return SimpleNamespace(resource_name=name, configs=[SimpleNamespace(name=n, config_operation=op, value=v)
                                                        for n, op, v in ops])


def test_a_node_changes_its_loggers_with_kafkas_checks():
    logger = logging.getLogger("pykraft.test.configs")
    try:
        assert configs_api.change_loggers(_logger_change("1", ("pykraft.test.configs", 0, "TRACE")), 1, False) == (
            ErrorCode.NONE, None)
        assert configs_api.loggers()["pykraft.test.configs"] == "TRACE" and logger.level == configs_api.TRACE
        assert configs_api.change_loggers(_logger_change("1", ("pykraft.test.configs", 0, "WARN")), 1, True) == (
            ErrorCode.NONE, None)
        assert logger.level == configs_api.TRACE  # validate only
        configs_api.change_loggers(_logger_change("1", ("pykraft.test.configs", 1, None)), 1, False)
        assert logger.level == logging.NOTSET
    finally:
        logger.setLevel(logging.NOTSET)
    assert configs_api.change_loggers(_logger_change("2", ("root", 0, "INFO")), 1, False) == (
        ErrorCode.INVALID_REQUEST, "Unexpected node id. Expected 1, but received 2")
    assert configs_api.change_loggers(_logger_change("1", ("no.such.logger", 0, "INFO")), 1, False) == (
        ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!")
    assert configs_api.change_loggers(_logger_change("1", ("root", 0, "LOUD")), 1, False) == (
        ErrorCode.INVALID_CONFIG, "Cannot set the log level of root to LOUD as it is not a supported log level. "
                                  "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN")
    assert configs_api.change_loggers(_logger_change("1", ("root", 1, None)), 1, False) == (
        ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    assert configs_api.change_loggers(_logger_change("1", ("root", 2, "INFO")), 1, False) == (
        ErrorCode.INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")


def test_add_config_file_is_read_as_a_properties_file(tmp_path):
    from pykraft.cli.configs_cmd import configs_to_add
    path = tmp_path / "new.properties"
    path.write_text("# Kafka's example\nlog.retention.ms = 86400000\nmin.insync.replicas=2\n")
    options = args.parse([*B, "--broker-defaults", "--alter", "--add-config-file", str(path)])
    assert configs_to_add(options) == {"log.retention.ms": "86400000", "min.insync.replicas": "2"}
    missing = args.parse([*B, "--broker-defaults", "--alter", "--add-config-file", str(tmp_path / "nope")])
    with pytest.raises(Exception, match="does not exist"):
        configs_to_add(missing)
