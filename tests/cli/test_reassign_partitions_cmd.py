"""`pykraft reassign-partitions` without a cluster: Kafka's flag checks and their texts, the JSON formats and their
errors, Kafka's replica placement for --generate (its documented examples), and the output texts."""

from __future__ import annotations

import json
import random

import pytest

from pykraft.admin.partition_reassignments import PartitionReassignment
from pykraft.cli import reassign_plan as plan
from pykraft.cli.reassign_partitions_cmd import run
from pykraft.cli.reassign_plan import BrokerSlot, PartitionState, PlanError

SERVER = ["--bootstrap-server", "127.0.0.1:1"]


def outcome(capsys, *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


@pytest.mark.parametrize(("args", "message"), [
    (["--list", "--execute", *SERVER],
     "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list"),
    (["--list"], "Please specify either --bootstrap-server or --bootstrap-controller"),
    (["--list", *SERVER, "--bootstrap-controller", "127.0.0.1:2"],
     "Please don't specify both --bootstrap-server and --bootstrap-controller"),
    (["--execute", *SERVER], 'Missing required argument "[reassignment-json-file]"'),
    (["--generate", *SERVER, "--broker-list", "1"], 'Missing required argument "[topics-to-move-json-file]"'),
    (["--execute", "--bootstrap-controller", "127.0.0.1:2", "--reassignment-json-file", "f"],
     'Option "[bootstrap-controller]" can\'t be used with action "[execute]"'),
    (["--list", *SERVER, "--additional"], 'Option "[additional]" can\'t be used with action "[list]"'),
    (["--verify", *SERVER, "--reassignment-json-file", "f", "--throttle", "10"],
     'Option "[throttle]" can\'t be used with action "[verify]"'),
    (["--list", *SERVER, "--frobnicate"], "frobnicate is not a recognized option"),
    (["--list", "--bootstrap-server"], "Option bootstrap-server requires an argument"),
    (["--execute", *SERVER, "--reassignment-json-file", "f", "--throttle", "abc"],
     "Cannot parse argument 'abc' of option throttle"),
    (["--execute", *SERVER, "--reassignment-json-file", "f", "--throttle", "1048576"],
     "--throttle is not supported: pykraft does not implement replication throttling "
     "(leader/follower.replication.throttled.rate)"),
    (["--execute", *SERVER, "--reassignment-json-file", "f", "--replica-alter-log-dirs-throttle", "0"],
     "--replica-alter-log-dirs-throttle is not supported: pykraft does not implement throttling of replica moves "
     "between log directories (replica.alter.log.dirs.io.max.bytes.per.second)"),
])
def test_usage_problems_are_one_stderr_line_and_exit_1(capsys, args, message):
    assert outcome(capsys, *args) == (1, "", f"pykraft reassign-partitions: {message}")


def test_help_exits_0(capsys):
    code, out, _ = outcome(capsys, "--help")
    assert code == 0 and "This tool helps to move topic partitions between replicas." in out


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "The input string is not a valid JSON"),
    ('{"version":2,"partitions":[]}', "Not supported version field value 2"),
    ('{"partitions":[{"partition":0,"replicas":[1]}]}', "No such field exists: `topic`"),
    ('{"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}', 'Expected `Integer` value, received "0"'),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":1}]}', "Expected JSON array, received 1"),
    ('{"partitions":[]}', "Partition reassignment list cannot be empty"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "Partition replica list cannot be empty"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
     "Partition reassignment contains duplicate topic partitions: t-0"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2,1]},{"topic":"u","partition":1,"replicas":[3,3]}]}',
     "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1. u-1 contains "
     "multiple entries for 3"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}',
     "Size of replicas list [1, 2] is different from size of log dirs list [any] for partition t-0"),
])
def test_a_bad_reassignment_file_is_refused_before_any_request(capsys, tmp_path, text, message):
    path = tmp_path / "plan.json"
    path.write_text(text)
    code, out, err = outcome(capsys, "--execute", *SERVER, "--reassignment-json-file", str(path))
    assert (code, err) == (1, "") and out.startswith(f"Error: {message}")


def test_log_dirs_of_a_reassignment_file():
    parts, dirs = plan.parse_reassignment(
        '{"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/data/b","any"]}]}')
    assert parts == [(("t", 0), [1, 2])] and dirs == {("t", 0, 1): "/data/b"}


def test_log_dir_move_states_have_kafkas_texts():
    from pykraft.cli.reassign_log_dirs import MoveState, move_states_text

    states = {("t", 0, 2): MoveState("/b", "/a", "/b"), ("t", 0, 1): MoveState("/b", "/b"),
              ("t", 1, 1): MoveState("/b", "/a", "/c"), ("t", 2, 1): MoveState("/b", "/a"),
              ("u", 0, 1): MoveState("/b")}
    assert move_states_text(states).split("\n") == [
        "Reassignment of replica t-0-1 completed successfully.",
        "Partition t-1 on broker 1 is being moved to log dir /c instead of /b.",
        "Partition t-2 on broker 1 is not being moved from log dir /a to /b.",
        "Partition u-0 is not found in any live log dir on broker 1. There is likely an offline log directory on the "
        "broker.",
        "Reassignment of replica t-0-2 is still in progress."]
    assert [s.done for s in states.values()] == [False, True, False, True, False]


def test_generate_arguments():
    assert plan.parse_broker_list("1,2,3") == [1, 2, 3]
    with pytest.raises(PlanError, match='For input string: "x"'):
        plan.parse_broker_list("1,x")
    with pytest.raises(PlanError, match=r"Broker list contains duplicate entries: \[2\]"):
        plan.check_generate_args([1, 2, 2], ["t"])
    with pytest.raises(PlanError, match=r"List of topics to reassign contains duplicate entries: \[t\]"):
        plan.check_generate_args([1, 2], plan.parse_topics('{"version":1,"topics":[{"topic":"t"},{"topic":"t"}]}'))


class Fixed(random.Random):
    """randrange always 0: Kafka's fixedStartIndex 0, the examples of AdminUtils' documentation."""

    def randrange(self, *args, **kwargs) -> int:  # type: ignore[override]
        return 0


def test_rack_unaware_placement_is_kafkas_documented_example():
    placed = plan.assign_replicas([BrokerSlot(b, None) for b in range(5)], 10, 3, Fixed())
    assert placed[0] == [0, 1, 2] and placed[4] == [4, 0, 1]
    assert placed[5] == [0, 2, 3] and placed[9] == [4, 1, 2]  # the shift grows after a full round
    first = [placed[p][0] for p in range(10)]
    assert sorted(first) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_rack_aware_placement_alternates_racks_as_kafka_documents():
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert plan.rack_alternated(racks) == [0, 3, 1, 5, 4, 2]
    placed = plan.assign_replicas([BrokerSlot(b, r) for b, r in racks.items()], 7, 3, Fixed())
    assert [placed[p] for p in range(6)] == [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3]]
    assert placed[6] == [0, 4, 2]
    for replicas in placed.values():
        assert len({racks[b] for b in replicas}) == 3


def test_placement_refusals():
    with pytest.raises(PlanError, match="Replication factor: 3 larger than available brokers: 2."):
        plan.assign_replicas([BrokerSlot(1, None), BrokerSlot(2, None)], 1, 3, random.Random(1))


def test_output_texts_have_kafkas_shapes():
    assert plan.reassignment_json({("b", 1): [3, 1], ("a", 0): [1]}) == (
        '{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"b","partition":1,"replicas":[3,1],"log_dirs":["any","any"]}]}')
    rollback = plan.rollback_text({("a", 0): [2]}, {("a", 0): (1,), ("z", 0): (9,)})
    assert rollback.split("\n\n")[0] == "Current partition replica assignment"
    assert json.loads(rollback.split("\n\n")[1])["partitions"] == [
        {"topic": "a", "partition": 0, "replicas": [1], "log_dirs": ["any"]}]
    assert rollback.endswith("Save this to use as the --reassignment-json-file option during rollback")
    assert plan.status_text({("t", 1): PartitionState((1, 2), (2, 3), False),
                             ("t", 0): PartitionState((2, 3), (2, 3), True),
                             ("u", 0): PartitionState((1,), (2,), True)}).split("\n") == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition u-0, but replica set is 1 rather than 2."]
    assert plan.list_text({}) == "No partition reassignments found."
    assert plan.list_text({("t", 0): PartitionReassignment((2, 3, 4, 1), (4,), (1,)),
                           ("s", 2): PartitionReassignment((1, 2), (2,), ())}).split("\n") == [
        "Current partition reassignments:", "s-2: replicas: 1,2. adding: 2.",
        "t-0: replicas: 2,3,4,1. adding: 4. removing: 1."]


def test_kafkas_no_throttle_value_is_accepted(capsys, tmp_path):
    # -1 is Kafka's default ("no throttle"): not refused; the run goes on to read the (missing) file.
    code, out, err = outcome(capsys, "--execute", *SERVER, "--reassignment-json-file", str(tmp_path / "none.json"),
                             "--throttle", "-1", "--replica-alter-log-dirs-throttle", "-1")
    assert (code, err) == (1, "") and out.startswith("Error: ") and "none.json" in out
