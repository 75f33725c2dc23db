"""`pykraft metadata-quorum` flags, exit codes and one-line errors; output through a fake transport."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.admin import connect
from pykraft.cli import metadata_quorum_cmd
from pykraft.cli.main import app
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reconfig_messages import add_voter_response, remove_voter_response
from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.meta_properties import MetaProperties, write_meta_properties

# tests/ is on sys.path (pytest's rootdir-based import of the tests/<area> packages)
from admin.fakes import ZERO_MS, FakeTransport, describe_cluster, describe_quorum, replica

runner = CliRunner()
A, B = ("127.0.0.1", 9093), ("127.0.0.1", 9094)
DIR = uuid.UUID(int=0xBEEF)


def mq(*args: str):
    return runner.invoke(app, ["metadata-quorum", *args])


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: nothing listens there


@pytest.fixture()
def fast_config(tmp_path: Path) -> Path:
    path = tmp_path / "admin.properties"
    path.write_text("default.api.timeout.ms=300\nretry.backoff.ms=20\nrequest.timeout.ms=200\n")
    return path


@pytest.fixture()
def fake(monkeypatch) -> FakeTransport:
    """Route the CLI's admin client to a fake cluster: controller 2 at B leads."""
    transport = FakeTransport({A: lambda r: describe_cluster(2, {1: A, 2: B}, "CLUSTER-X")})
    real = connect.make_client

    def make_client(*args, **kwargs):
        return real(*args, transport=transport, **kwargs)

    monkeypatch.setattr(metadata_quorum_cmd, "make_client", make_client)
    return transport


def one_line_failure(result, code: int = 1) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.rstrip("\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bootstrap-controller", "h:1", "describe", "--status", "--replication"],
         "Only one of --status or --replication should be specified with describe sub-command"),
        (["--bootstrap-controller", "h:1", "describe"],
         "One of --status or --replication must be specified with describe sub-command"),
        (["--bootstrap-controller", "h:1", "describe", "--status", "--human-readable"],
         "The option --human-readable is only supported along with --replication"),
        (["describe", "--status"], "exactly one of --bootstrap-server or --bootstrap-controller is required"),
        (["--bootstrap-controller", "h:1", "--bootstrap-server", "h:2", "describe", "--status"],
         "exactly one of --bootstrap-server or --bootstrap-controller is required"),
        (["--bootstrap-controller", "h:x", "describe", "--status"], "invalid bootstrap address 'h:x'"),
        (["--bootstrap-controller", "h:1", "describe", "--bogus"], "No such option: --bogus"),
        (["--bootstrap-controller", "h:1", "add-controller"],
         "You must supply the configuration file of the controller you are adding when using add-controller."),
        (["--bootstrap-controller", "h:1", "remove-controller", "-i", "-3", "-d", "AAAAAAAAAAAAAAAAAAAAAQ"],
         "Invalid negative --controller-id: -3"),
        (["--bootstrap-controller", "h:1", "remove-controller", "-i", "3", "-d", "nope"],
         "Failed to parse --controller-directory-id"),
        (["--bootstrap-controller", "h:1", "remove-controller", "-i", "3"], "Missing option"),
        (["--bootstrap-controller", "h:1", "reassign"], "give exactly one of --target-voters, --cancel or --status"),
        (["--bootstrap-controller", "h:1", "reassign", "--cancel", "--status"],
         "give exactly one of --target-voters, --cancel or --status"),
        (["--bootstrap-controller", "h:1", "reassign", "--status", "--timeout-ms", "0"], "Invalid --timeout-ms: 0"),
        (["--bootstrap-controller", "h:1", "--command-config", "/no/such/file", "describe", "--status"],
         "Properties file /no/such/file does not exist."),
    ],
)
def test_bad_flags_are_one_line_and_exit_1(args, message):
    line = one_line_failure(mq(*args))
    assert line.startswith("pykraft metadata-quorum: ")
    assert message in line


def test_unreachable_bootstrap_is_one_line_naming_the_address(fast_config: Path):
    port = refused_port()
    line = one_line_failure(mq("--bootstrap-controller", f"127.0.0.1:{port}", "--command-config", str(fast_config),
                               "describe", "--status"))
    assert line == (f"pykraft metadata-quorum: cannot reach any bootstrap controller "
                    f"(127.0.0.1:{port}: connection refused)")


def test_help_exits_0():
    result = mq("describe", "--help")
    assert result.exit_code == 0
    assert "--replication" in result.stdout


def test_describe_status_prints_kafkas_eight_lines(fake: FakeTransport):
    fake.handlers[B] = lambda r: describe_quorum(
        2, 9, 120, (replica(1, 110, DIR, 1000, 900), replica(2, 120, None, 1100, 1100)),
        nodes={2: [("CONTROLLER", "127.0.0.1", 9094)]})
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "describe", "--status")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "ClusterId:              CLUSTER-X",
        "LeaderId:               2",
        "LeaderEpoch:            9",
        "HighWatermark:          120",
        "MaxFollowerLag:         10",
        "MaxFollowerLagTimeMs:   200",
        f'CurrentVoters:          [{{"id": 1, "directoryId": "{uuid_to_kafka_str(DIR)}"}}, '
        '{"id": 2, "directoryId": null, "endpoints": ["CONTROLLER://127.0.0.1:9094"]}]',
        "CurrentObservers:       []",
    ]


def test_describe_replication_leader_first(fake: FakeTransport):
    fake.handlers[B] = lambda r: describe_quorum(2, 9, 120, (replica(1, 110, DIR), replica(2, 120)), (replica(5, 7),))
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "describe", "--replication")
    assert result.exit_code == 0, result.stderr
    statuses = [line.split("\t")[6].strip() for line in result.stdout.splitlines()]
    assert statuses == ["Status", "Leader", "Follower", "Observer"]
    assert all(line.endswith("\t") for line in result.stdout.splitlines())


def test_remove_controller_kafka_error_is_one_line(fake: FakeTransport):
    fake.handlers[B] = lambda r: remove_voter_response(ErrorCode.VOTER_NOT_FOUND, "no voter 3 with that directory")
    line = one_line_failure(mq("--bootstrap-controller", "127.0.0.1:9093", "remove-controller", "-i", "3",
                               "-d", uuid_to_kafka_str(DIR)))
    assert line == "pykraft metadata-quorum: VOTER_NOT_FOUND: no voter 3 with that directory"


def test_remove_controller_success(fake: FakeTransport):
    fake.handlers[B] = lambda r: remove_voter_response(ErrorCode.NONE)
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "remove-controller", "--controller-id", "3",
                "--controller-directory-id", uuid_to_kafka_str(DIR))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"Removed KRaft controller 3 with directory id {uuid_to_kafka_str(DIR)}\n"


def test_remove_controller_in_doubt_exits_3(fake: FakeTransport, fast_config: Path):
    fake.handlers[B] = lambda r: remove_voter_response(ErrorCode.REQUEST_TIMED_OUT)
    line = one_line_failure(mq("--bootstrap-controller", "127.0.0.1:9093", "--command-config", str(fast_config),
                               "remove-controller", "-i", "3", "-d", uuid_to_kafka_str(DIR)), code=3)
    assert "outcome unknown: removing controller 3 may or may not have been applied" in line


def controller_properties(tmp_path: Path, node_id: int = 4) -> Path:
    data = tmp_path / "data"
    write_meta_properties(str(data), MetaProperties("CLUSTER-X", node_id, DIR))
    path = tmp_path / "controller.properties"
    path.write_text("\n".join([
        "process.roles=controller", f"node.id={node_id}", "controller.listener.names=CONTROLLER",
        "listeners=CONTROLLER://0.0.0.0:9099", "advertised.listeners=CONTROLLER://ctrl-4.example:9099",
        "controller.quorum.bootstrap.servers=127.0.0.1:9093", f"metadata.log.dir={data}",
        "default.api.timeout.ms=300"]) + "\n")
    return path


def test_add_controller_reads_the_new_controllers_config_and_directory(fake: FakeTransport, tmp_path: Path):
    seen = []
    fake.handlers[B] = lambda r: seen.append(r.message) or add_voter_response(ErrorCode.NONE)
    config = controller_properties(tmp_path)
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "--command-config", str(config), "add-controller")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (f"Added controller 4 with directory id {uuid_to_kafka_str(DIR)} and endpoints: "
                             "CONTROLLER://ctrl-4.example:9099\n")
    assert (seen[0].voter_id, seen[0].voter_directory_id) == (4, DIR)
    assert [(item.name, item.host, item.port) for item in seen[0].listeners] == [
        ("CONTROLLER", "ctrl-4.example", 9099)]


def test_add_controller_dry_run_sends_nothing(fake: FakeTransport, tmp_path: Path):
    config = controller_properties(tmp_path)
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "--command-config", str(config), "add-controller",
                "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("DRY RUN of adding controller 4 with directory id ")
    assert fake.sent == []


def test_add_controller_with_a_broker_config_is_refused(tmp_path: Path):
    config = controller_properties(tmp_path)
    config.write_text(config.read_text().replace("process.roles=controller", "process.roles=broker"))
    line = one_line_failure(mq("--bootstrap-controller", "127.0.0.1:9093", "--command-config", str(config),
                               "add-controller"))
    assert "pykraft metadata-quorum: " in line


def _alter_answer(code: ErrorCode, message: str | None):
    from kio.schema.alter_partition_reassignments.v0 import response as alter_resp

    return alter_resp.AlterPartitionReassignmentsResponse(
        throttle_time=ZERO_MS, error_code=ErrorCode.NONE, error_message=None, responses=(
            alter_resp.ReassignableTopicResponse(name="__cluster_metadata", partitions=(
                alter_resp.ReassignablePartitionResponse(partition_index=0, error_code=code,
                                                         error_message=message),)),))


def _ongoing(voters, target):
    from kio.schema.list_partition_reassignments.v0 import response as list_resp

    replicas = tuple(sorted(set(voters) | set(target)))
    return list_resp.OngoingTopicReassignment(name="__cluster_metadata", partitions=(
        list_resp.OngoingPartitionReassignment(
            partition_index=0, replicas=replicas, adding_replicas=tuple(sorted(set(target) - set(voters))),
            removing_replicas=tuple(sorted(set(voters) - set(target)))),))


def test_reassign_sends_the_target_and_prints_progress_until_done(fake: FakeTransport):
    from kio.schema.list_partition_reassignments.v0 import response as list_resp

    steps = [((1, 2, 3), (3, 4, 5)), ((1, 2, 3, 4), (3, 4, 5)), ((2, 3, 4, 5), (3, 4, 5))]
    seen = {"alter": [], "list": 0}

    def leader(request):
        if request.api_key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
            seen["alter"].append(list(request.message.topics[0].partitions[0].replicas))
            return _alter_answer(ErrorCode.REQUEST_TIMED_OUT, "in progress")
        if request.api_key == ApiKey.LIST_PARTITION_REASSIGNMENTS:
            index = seen["list"]
            seen["list"] += 1
            topics = (_ongoing(*steps[index]),) if index < len(steps) else ()
            return list_resp.ListPartitionReassignmentsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.NONE,
                                                                error_message=None, topics=topics)
        return describe_quorum(3, 5, 10, tuple(replica(i, 10, DIR) for i in (3, 4, 5)))

    fake.handlers[B] = leader
    fake.handlers[A] = lambda r: describe_cluster(1, {1: B})
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "reassign", "--target-voters", "3,4,5")
    assert result.exit_code == 0, result.stderr
    assert seen["alter"] == [[3, 4, 5]], "sent once"
    assert result.stdout.splitlines() == [
        "Reassigning the quorum to voters [3, 4, 5] (the leader moves it one voter at a time)",
        "Voters [1, 2, 3]; adding [4, 5]; removing [1, 2]",
        "Voters [1, 2, 3, 4]; adding [5]; removing [1, 2]",
        "Voters [2, 3, 4, 5]; adding []; removing [2]",
        "Reassignment complete. Voters: [3, 4, 5]",
    ]


def test_reassign_refused_by_the_leader_is_one_line_with_its_reason(fake: FakeTransport):
    fake.handlers[B] = lambda r: _alter_answer(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "node 9 is unknown to the leader")
    fake.handlers[A] = lambda r: describe_cluster(1, {1: B})
    line = one_line_failure(mq("--bootstrap-controller", "127.0.0.1:9093", "reassign", "--target-voters", "1,2,9"))
    assert "node 9 is unknown to the leader" in line


def test_reassign_status_without_a_reassignment(fake: FakeTransport):
    from kio.schema.list_partition_reassignments.v0 import response as list_resp

    fake.handlers[B] = lambda r: list_resp.ListPartitionReassignmentsResponse(
        throttle_time=ZERO_MS, error_code=ErrorCode.NONE, error_message=None, topics=())
    fake.handlers[A] = lambda r: describe_cluster(1, {1: B})
    result = mq("--bootstrap-controller", "127.0.0.1:9093", "reassign", "--status")
    assert (result.exit_code, result.stdout.strip()) == (0, "No quorum reassignment is in progress.")
