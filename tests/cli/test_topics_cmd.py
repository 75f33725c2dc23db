"""`pykraft topics` and `pykraft brokers` against a real in-process controller (its event loop in a thread, the CLI
in the test's thread through CliRunner): Kafka's output lines exactly, and every failure as one line, exit 1, on the
stream Kafka uses (stdout for "Error while executing topic command : ...", stderr for the rest)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.records.uuids import uuid_to_kafka_str

# tests/ is on sys.path (pytest's rootdir-based import of the tests/<area> packages)
from admin.topic_cluster import broker_port, controller_with_brokers, heartbeat, host
from node.helpers import call

runner = CliRunner()
PREFIX = "Error while executing topic command : "
LEFT = "\tElr: \tLastKnownElr: "


class Cluster:
    """A controller with brokers 1-4 registered (rack r1 on 1) and unfenced, running on its own thread's loop."""

    def __init__(self, tmp_path) -> None:
        self.tmp_path = tmp_path
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            # The brokers heartbeat once: a session of Kafka's 9 s default expired under load before the module's
            # last test ("All brokers are currently fenced"), so it outlasts the module; fence() fences explicitly.
            async with controller_with_brokers(self.tmp_path, brokers=(1, 2, 3, 4), racks={1: "r1"},
                                               extra="broker.session.timeout.ms=3600000") as (port, rt):
                self.port, self.runtime = port, rt
                self.ready.set()
                await self.stop.wait()
        except BaseException as exc:  # surfaced by the fixture instead of hanging it
            self.failure = exc
            self.ready.set()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=20)

    def fence(self, broker_id: int) -> None:
        async def go() -> None:
            runtime = self.runtime
            epoch = host(runtime).controller.cluster.registration(broker_id).epoch
            await call(self.port, heartbeat(broker_id, epoch, runtime.core.high_watermark, fence=True))
            while not host(runtime).controller.cluster.is_fenced(broker_id):
                await asyncio.sleep(0.01)
        self.run(go())

    def topic_id(self, name: str) -> str:
        return uuid_to_kafka_str(host(self.runtime).controller.replication.topics_by_name[name])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = Cluster(tmp_path_factory.mktemp("topics-cli"))
    started.thread.start()
    assert started.ready.wait(30)
    if started.failure is not None:
        raise started.failure
    yield started
    started.loop.call_soon_threadsafe(started.stop.set)
    started.thread.join(30)


def topics(cluster: Cluster, *args: str):
    return runner.invoke(app, ["topics", *args, "--bootstrap-server", f"127.0.0.1:{cluster.port}"])


def ok(result) -> list[str]:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    return result.stdout.splitlines()


def failed(result) -> str:
    """The one line of a failed run: Kafka's printException line on stdout, every other refusal on stderr."""
    assert result.exit_code == 1, (result.stdout, result.stderr)
    stdout, stderr = result.stdout.splitlines(), result.stderr.splitlines()
    assert len(stdout) + len(stderr) == 1, (result.stdout, result.stderr)
    line = (stdout or stderr)[0]
    assert line.startswith(PREFIX) == bool(stdout), (result.stdout, result.stderr)
    return line


def test_create_list_describe_and_delete_print_kafkas_lines(cluster):
    assert ok(topics(cluster, "create", "--topic", "placed", "--replica-assignment", "1:2,2:1")) == [
        "Created topic placed."]
    assert ok(topics(cluster, "create", "--topic", "auto", "--partitions", "3", "--replication-factor", "2",
                     "--config", "cleanup.policy=compact")) == ["Created topic auto."]
    assert ok(topics(cluster, "create", "--topic", "with.dot", "--partitions", "1", "--replication-factor", "1")) \
        == ["WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
            "collide. To avoid issues it is best to use either, but not both.", "Created topic with.dot."]
    assert ok(topics(cluster, "list")) == ["auto", "placed", "with.dot"]
    assert ok(topics(cluster, "list", "--topic", "p.*")) == ["placed"]

    assert ok(topics(cluster, "describe", "--topic", "placed")) == [
        f"Topic: placed\tTopicId: {cluster.topic_id('placed')}\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: ",
        f"\tTopic: placed\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2{LEFT}",
        f"\tTopic: placed\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1{LEFT}"]
    described = ok(topics(cluster, "describe"))
    assert [line.split("\t")[0] for line in described if not line.startswith("\t")] == [
        "Topic: auto", "Topic: placed", "Topic: with.dot"]
    assert sum(line.startswith("\tTopic: auto\tPartition: ") for line in described) == 3

    # --if-not-exists: no error and, as Kafka, no line; --if-exists on a pattern that matches nothing: silent too.
    assert ok(topics(cluster, "create", "--topic", "placed", "--partitions", "1", "--if-not-exists")) == []
    assert ok(topics(cluster, "describe", "--topic", "absent", "--if-exists")) == []
    assert ok(topics(cluster, "delete", "--topic", "absent", "--if-exists")) == []

    assert ok(topics(cluster, "delete", "--topic", "auto|with\\.dot")) == []  # Kafka prints nothing either
    assert ok(topics(cluster, "list")) == ["placed"]
    assert ok(topics(cluster, "delete", "--topic", "placed")) == []
    assert ok(topics(cluster, "list")) == [""]  # Kafka prints the empty join: one empty line


def test_partition_filters_and_brokers_list(cluster):
    assert ok(topics(cluster, "create", "--topic", "filters", "--replica-assignment", "1:2,4:3,3:4")) == [
        "Created topic filters."]
    assert ok(topics(cluster, "create", "--topic", "lonely", "--replica-assignment", "4")) == [
        "Created topic lonely."]
    cluster.fence(4)  # filters-1 moves its leader to 3, both lose 4 from the ISR; lonely-0 has no leader left
    lines = ok(topics(cluster, "describe", "--under-replicated-partitions"))
    assert lines == [f"\tTopic: filters\tPartition: 1\tLeader: 3\tReplicas: 4,3\tIsr: 3{LEFT}",
                     f"\tTopic: filters\tPartition: 2\tLeader: 3\tReplicas: 3,4\tIsr: 3{LEFT}"]
    lines = ok(topics(cluster, "describe", "--unavailable-partitions"))
    assert lines == [f"\tTopic: lonely\tPartition: 0\tLeader: none\tReplicas: 4\tIsr: 4{LEFT}"]

    table = ok(runner.invoke(app, ["brokers", "list", "--bootstrap-controller", f"127.0.0.1:{cluster.port}"]))
    assert table[0].split() == ["ID", "HOST", "PORT", "RACK", "STATE"]
    assert [row.split() for row in table[1:]] == [
        ["1", "broker-1", str(broker_port(1)), "r1", "unfenced"],
        ["2", "broker-2", str(broker_port(2)), "-", "unfenced"],
        ["3", "broker-3", str(broker_port(3)), "-", "unfenced"],
        ["4", "broker-4", str(broker_port(4)), "-", "fenced"]]
    as_json = json.loads(ok(runner.invoke(app, ["brokers", "--bootstrap-server", f"127.0.0.1:{cluster.port}",
                                                "list", "--json"]))[0])
    assert as_json[0] == {"id": 1, "host": "broker-1", "port": broker_port(1), "rack": "r1", "fenced": False}
    assert [b["fenced"] for b in as_json] == [False, False, False, True]
    ok(topics(cluster, "delete", "--topic", "filters|lonely"))


@pytest.mark.parametrize(("args", "line"), [
    (["describe", "--topic", "nope"], "Topic 'nope' does not exist as expected"),
    (["delete", "--topic", "nope"], "Topic 'nope' does not exist as expected"),
    (["create", "--topic", "bad name", "--partitions", "1", "--replication-factor", "1"],
     PREFIX + "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, "
              "'.', '_' and '-'"),
    (["create", "--topic", "x", "--partitions", "0"], "The partitions must be greater than 0"),
    (["create", "--topic", "x", "--replication-factor", "0"],
     "The replication factor must be between 1 and 32767 inclusive"),
    (["create", "--topic", "x", "--replica-assignment", "1:1"],
     PREFIX + "Partition replica lists may not contain duplicate entries: 1"),
    (["create", "--topic", "x", "--replica-assignment", "1:2,3"],
     PREFIX + "Partition 1 has different replication factor: [3]"),
    (["create", "--topic", "x", "--replica-assignment", "1,a"], PREFIX + 'For input string: "a"'),
    (["create", "--topic", "x", "--replica-assignment", "1", "--partitions", "1"],
     "Option \"[replica-assignment]\" can't be used with option \"[partitions]\""),
    (["create", "--topic", "x", "--config", "retention.ms"],
     'requirement failed: Invalid topic config: all configs to be added must be in the format "key=val".'),
    (["create", "--topic", "x", "--replica-assignment", "9"],
     PREFIX + "The manual partition assignment includes broker 9, but no such broker is registered."),
    (["describe", "--topic", "("], None),
    (["create", "--partitions", "1"], "pykraft topics: Missing option '--topic'."),
    (["create", "--topic", "x", "--bogus"], "pykraft topics: No such option: --bogus"),
])
def test_every_refusal_is_one_line_and_exit_1(cluster, args, line):
    got = failed(topics(cluster, *args))
    if line is None:
        assert got.startswith(PREFIX + "Invalid topic pattern '(':")
    else:
        assert got == line


def test_existing_topic_and_too_many_replicas_are_the_servers_words(cluster):
    ok(topics(cluster, "create", "--topic", "twice", "--partitions", "1", "--replication-factor", "1"))
    assert failed(topics(cluster, "create", "--topic", "twice", "--partitions", "1")) == (
        PREFIX + "Topic 'twice' already exists.")
    assert failed(topics(cluster, "create", "--topic", "wide", "--replication-factor", "9")).startswith(
        PREFIX + "Unable to replicate the partition 9 time(s)")
    ok(topics(cluster, "delete", "--topic", "twice"))


def test_missing_or_unreachable_bootstrap_is_one_line(tmp_path):
    assert failed(runner.invoke(app, ["topics", "list"])) == "--bootstrap-server must be specified"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        config = tmp_path / "admin.properties"
        config.write_text("default.api.timeout.ms=300\nretry.backoff.ms=20\nretry.backoff.max.ms=40\n")
        args = ["--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(config)]
        assert failed(runner.invoke(app, ["topics", "list", *args])) == (
            PREFIX + f"cannot reach any bootstrap server (127.0.0.1:{port}: connection refused)")
        assert failed(runner.invoke(app, ["brokers", "list", *args])) == (
            f"pykraft brokers: cannot reach any bootstrap server (127.0.0.1:{port}: connection refused)")
