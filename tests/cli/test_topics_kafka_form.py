"""Golden test of `pykraft topics` in Kafka's action-flag form: a kafka-topics.sh line with `pykraft topics` in its
place prints what Kafka 4's TopicCommand prints, on the same stream, with the same exit code.

The expected texts are Kafka's (tools/.../TopicCommand.java: `Created topic X.`, the describe lines with
`Configs: k=v`, printException's `Error while executing topic command : ` on stdout, the IllegalArgumentException
and usage messages on stderr, exit 1 for every failure). One deliberate difference: Kafka follows a usage error
with its option help; pykraft prints the one message line.
"""

from __future__ import annotations

import pytest

from pykraft.cli.main import app

from .test_topics_cmd import LEFT, PREFIX, cluster, runner  # noqa: F401 - the module-scoped cluster fixture

ONE_ACTION = "Command must include exactly one action: --list, --describe, --create, --alter or --delete"


def kafka_topics(cluster, *args: str):
    """`kafka-topics.sh --bootstrap-server H:P ARGS` with pykraft in its place: (exit code, stdout, stderr)."""
    result = runner.invoke(app, ["topics", "--bootstrap-server", f"127.0.0.1:{cluster.port}", *args])
    return result.exit_code, result.stdout, result.stderr


def header(cluster, name: str, partitions: int, configs: str) -> str:
    return (f"Topic: {name}\tTopicId: {cluster.topic_id(name)}\tPartitionCount: {partitions}"
            f"\tReplicationFactor: 1\tConfigs: {configs}\n")


def test_a_kafka_topics_session_prints_kafkas_texts(cluster):
    assert kafka_topics(cluster, "--create", "--topic", "golden", "--replica-assignment", "1,2",
                        "--config", "retention.ms=1000", "--config", "cleanup.policy=compact") == (
        0, "Created topic golden.\n", "")
    assert kafka_topics(cluster, "--list", "--topic", "gold.*") == (0, "golden\n", "")
    # Configs: the topic's non-default configs, as the server lists them (by name)
    assert kafka_topics(cluster, "--describe", "--topic", "golden") == (0, (
        header(cluster, "golden", 2, "cleanup.policy=compact,retention.ms=1000")
        + f"\tTopic: golden\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1{LEFT}\n"
        + f"\tTopic: golden\tPartition: 1\tLeader: 2\tReplicas: 2\tIsr: 2{LEFT}\n"), "")
    # --alter --partitions N: nothing printed; the replica assignment lists every partition, existing ones first
    assert kafka_topics(cluster, "--alter", "--topic", "golden", "--partitions", "4",
                        "--replica-assignment", "1,2,3,4") == (0, "", "")
    lines = kafka_topics(cluster, "--describe", "--topic", "golden")[1].splitlines()
    assert lines[0] == header(cluster, "golden", 4, "cleanup.policy=compact,retention.ms=1000").rstrip("\n")
    assert lines[3:] == [f"\tTopic: golden\tPartition: 2\tLeader: 3\tReplicas: 3\tIsr: 3{LEFT}",
                         f"\tTopic: golden\tPartition: 3\tLeader: 4\tReplicas: 4\tIsr: 4{LEFT}"]
    assert kafka_topics(cluster, "--alter", "--topic", "golden", "--partitions", "5") == (0, "", "")
    assert kafka_topics(cluster, "--describe", "--topic", "golden")[1].count("\tPartition: ") == 5
    assert kafka_topics(cluster, "--delete", "--topic", "golden") == (0, "", "")
    assert kafka_topics(cluster, "--list", "--topic", "gold.*") == (0, "\n", "")


@pytest.mark.parametrize(("args", "stdout", "stderr"), [
    # usage errors (CommandLineUtils.printUsageAndThrow / IllegalArgumentException): stderr
    (["--create", "--list"], "", ONE_ACTION),
    (["--topic", "x"], "", ONE_ACTION),
    (["--alter", "--topic", "existing"], "", 'Missing required argument "[partitions]"'),
    (["--delete", "--topic", "nope"], "", "Topic 'nope' does not exist as expected"),
    (["--alter", "--topic", "nope", "--partitions", "3"], "", "Topic 'nope' does not exist as expected"),
    (["--create", "--topic", "x", "--partitions", "0"], "", "The partitions must be greater than 0"),
    # failures while executing (printException): stdout, with Kafka's prefix and the server's message
    (["--create", "--topic", "x", "--config", "foo.bar=1"], PREFIX + "Unknown topic config name: foo.bar", ""),
    (["--create", "--topic", "x", "--config", "retention.ms=-5"],
     PREFIX + "Invalid value -5 for configuration retention.ms: Value must be at least -1", ""),
    (["--create", "--topic", "existing", "--partitions", "1"], PREFIX + "Topic 'existing' already exists.", ""),
    (["--alter", "--topic", "existing", "--partitions", "1"],
     PREFIX + "The topic existing currently has 2 partition(s); 1 would not be an increase.", ""),
    (["--alter", "--topic", "existing", "--partitions", "2"], PREFIX + "Topic already has 2 partition(s).", ""),
])
def test_failures_go_where_kafka_prints_them_and_exit_1(cluster, args, stdout, stderr):
    if kafka_topics(cluster, "--list", "--topic", "existing")[1] != "existing\n":
        assert kafka_topics(cluster, "--create", "--topic", "existing", "--partitions", "2",
                            "--replication-factor", "1")[0] == 0
    code, out, err = kafka_topics(cluster, *args)
    assert (code, out.rstrip("\n"), err.rstrip("\n")) == (1, stdout, stderr)


def test_the_sub_command_form_still_works_and_alters(cluster):
    base = ["topics", "--bootstrap-server", f"127.0.0.1:{cluster.port}"]
    assert runner.invoke(app, [*base, "create", "--topic", "sub", "--partitions", "1"]).stdout == "Created topic sub.\n"
    assert runner.invoke(app, [*base, "alter", "--topic", "sub", "--partitions", "2"]).exit_code == 0
    assert "PartitionCount: 2" in runner.invoke(app, [*base, "describe", "--topic", "sub"]).stdout
    assert runner.invoke(app, [*base, "delete", "--topic", "sub"]).exit_code == 0
