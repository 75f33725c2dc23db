"""The client tools against one cluster (a controller and three brokers started through the CLI), with the command
lines of Kafka's documentation: console-producer and console-consumer, consumer-groups (lag, members, state,
every reset, deletions), get-offsets, the perf tests and dump-log of what was written; each checked for Kafka's
output shape and for its effect, plus a bad invocation each (one line, Kafka's exit status).
"""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from pykraft.admin.partitioner import partition_for_key
from pykraft.node.local_cluster import CLI

from .helpers import wait_for
from .tools_cluster import brokers, create_topic, offsets, pykraft, start_tools_cluster, stop_cluster, table

TOPIC = "orders"
RECORDS = 30
KEYS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_tools_cluster(tmp_path_factory.mktemp("tools") / "cluster")
    try:
        create_topic(cluster, TOPIC, 3)
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="module")
def produced(cluster):
    """RECORDS keyed lines through `console-producer --property parse.key=true --property key.separator=:`."""
    lines = [f"{KEYS[i % len(KEYS)]}:value-{i}" for i in range(RECORDS)]
    done = pykraft("console-producer", "--bootstrap-server", brokers(cluster), "--topic", TOPIC,
                   "--property", "parse.key=true", "--property", "key.separator=:", stdin="\n".join(lines) + "\n")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done
    return [line.split(":", 1) for line in lines]


def consume(cluster, *extra: str) -> subprocess.CompletedProcess:
    return pykraft("console-consumer", "--bootstrap-server", brokers(cluster), "--topic", TOPIC, *extra)


def test_console_producer_records_are_read_back_by_console_consumer_where_kafka_would_put_them(cluster, produced):
    done = consume(cluster, "--from-beginning", "--max-messages", str(RECORDS), "--property", "print.key=true",
                   "--property", "print.partition=true", "--property", "print.offset=true",
                   "--property", "key.separator=|")
    assert done.returncode == 0 and done.stderr.strip().endswith(f"Processed a total of {RECORDS} messages")
    rows = [line.split("|") for line in done.stdout.splitlines()]
    assert len(rows) == RECORDS
    by_partition: dict[int, list[tuple[int, str, str]]] = {}
    for partition, offset, key, value in rows:
        assert partition.startswith("Partition:") and offset.startswith("Offset:")
        by_partition.setdefault(int(partition[10:]), []).append((int(offset[7:]), key, value))
    expected: dict[int, list[tuple[str, str]]] = {}
    for key, value in produced:
        expected.setdefault(partition_for_key(key.encode(), 3), []).append((key, value))
    for partition, found in by_partition.items():
        assert [o for o, _, _ in found] == list(range(len(found)))  # each partition in offset order from 0
        assert [(k, v) for _, k, v in found] == expected[partition]
    assert offsets(cluster, TOPIC) == {p: len(v) for p, v in expected.items()} | {
        p: 0 for p in range(3) if p not in expected}


def test_console_consumer_reads_one_partition_from_an_offset_and_stops_on_timeout(cluster, produced):
    partition = partition_for_key(b"alpha", 3)
    done = consume(cluster, "--partition", str(partition), "--offset", "1", "--timeout-ms", "3000",
                   "--property", "print.key=true")
    expected = [f"{k}\t{v}" for k, v in produced if partition_for_key(k.encode(), 3) == partition][1:]
    assert done.returncode == 0 and done.stdout.splitlines() == expected
    assert done.stderr.strip().endswith(f"Processed a total of {len(expected)} messages")


def _describe(cluster, group: str, *extra: str) -> subprocess.CompletedProcess:
    return pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--describe", "--group", group, *extra)


def test_lag_is_exact_after_a_known_consume(cluster, produced):
    group, taken = "lag-check", 11
    done = consume(cluster, "--group", group, "--from-beginning", "--max-messages", str(taken))
    assert done.returncode == 0 and len(done.stdout.splitlines()) == taken
    described = _describe(cluster, group)
    assert described.returncode == 0
    assert described.stderr.strip() == f"Consumer group '{group}' has no active members."
    assert described.stdout.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                                         "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    rows = table(described.stdout, "GROUP")
    ends = offsets(cluster, TOPIC)
    assert sorted(int(r["PARTITION"]) for r in rows) == [0, 1, 2]
    for row in rows:
        assert int(row["LOG-END-OFFSET"]) == ends[int(row["PARTITION"])]
        assert int(row["LAG"]) == int(row["LOG-END-OFFSET"]) - int(row["CURRENT-OFFSET"])
        assert row["CONSUMER-ID"] == row["HOST"] == row["CLIENT-ID"] == "-"
    assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == taken
    assert sum(int(r["LAG"]) for r in rows) == RECORDS - taken


@pytest.fixture
def active_member(cluster, produced):
    """A console consumer in group `live` that stays in the group until stopped."""
    process = subprocess.Popen([*CLI, "console-consumer", "--bootstrap-server", brokers(cluster), "--topic", TOPIC,
                                "--group", "live", "--from-beginning"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "Stable" in _describe(cluster, "live", "--state").stdout, "the group stable")
        yield process
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)


def test_members_state_and_a_refused_reset_while_a_member_is_active(cluster, active_member):
    members = _describe(cluster, "live", "--members", "--verbose")
    assert members.returncode == 0 and members.stderr == ""
    (row,) = table(members.stdout, "GROUP")
    assert row["GROUP"] == "live" and row["HOST"] == "/127.0.0.1" and row["CLIENT-ID"] == "console-consumer"
    assert row["#PARTITIONS"] == "3" and row["CURRENT-ASSIGNMENT"] == f"{TOPIC}:0,1,2"
    state = _describe(cluster, "live", "--state")
    header, values = [line for line in state.stdout.splitlines() if line.strip()]
    assert header.split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert values.split()[0] == "live" and values.split()[-3:] == ["range", "Stable", "1"]
    offsets_view = _describe(cluster, "live")
    assert {r["CONSUMER-ID"] for r in table(offsets_view.stdout, "GROUP")} == {row["CONSUMER-ID"]}
    listed = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--list", "--state", "stable")
    assert listed.returncode == 0 and ["live", "Stable"] in [line.split() for line in listed.stdout.splitlines()]
    refused = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--reset-offsets", "--group", "live",
                      "--to-earliest", "--all-topics", "--execute")
    assert refused.returncode == 1
    assert ("Error: Assignments can only be reset if the group 'live' is inactive, but the current state is Stable."
            in refused.stdout.splitlines())


def _reset(cluster, group: str, *spec: str) -> dict[int, int]:
    done = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--reset-offsets", "--group", group,
                   *spec)
    assert done.returncode == 0, done.stdout + done.stderr
    if "--export" in spec:
        return {int(p): int(o) for _, p, o in (l.split(",") for l in done.stdout.split())}
    rows = table(done.stdout, "GROUP")
    assert ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"] in [line.split() for line in done.stdout.splitlines()]
    return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in rows}


def _committed(cluster, group: str) -> dict[int, int]:
    return {int(r["PARTITION"]): int(r["CURRENT-OFFSET"]) for r in table(_describe(cluster, group).stdout, "GROUP")}


def test_every_reset_scenario_plans_as_kafka_and_execute_applies_it(cluster, produced, tmp_path):
    group = "resets"
    assert consume(cluster, "--group", group, "--from-beginning", "--max-messages", "9").returncode == 0
    ends, before = offsets(cluster, TOPIC), _committed(cluster, "resets")
    plan = _reset(cluster, group, "--to-earliest", "--all-topics", "--dry-run")
    assert plan == {p: 0 for p in before} and _committed(cluster, group) == before  # a dry run changes nothing
    assert _reset(cluster, group, "--to-latest", "--topic", TOPIC, "--execute") == ends
    assert _committed(cluster, group) == ends
    assert _reset(cluster, group, "--shift-by", "-2", "--all-topics", "--execute") == {
        p: max(e - 2, 0) for p, e in ends.items()}
    assert _reset(cluster, group, "--to-offset", "1", "--topic", f"{TOPIC}:0,2", "--execute") == {
        0: min(1, ends[0]), 2: min(1, ends[2])}
    assert _reset(cluster, group, "--to-current", "--all-topics", "--dry-run") == _committed(cluster, group)
    assert _reset(cluster, group, "--to-datetime", "2000-01-01T00:00:00.000", "--all-topics", "--dry-run") == {
        p: 0 for p in ends}
    assert _reset(cluster, group, "--by-duration", "PT0.001S", "--all-topics", "--dry-run") == ends  # nothing newer
    exported = _reset(cluster, group, "--to-earliest", "--all-topics", "--dry-run", "--export")
    plan_file = tmp_path / "plan.csv"
    plan_file.write_text("".join(f"{TOPIC},{p},{o}\n" for p, o in exported.items()))
    assert _reset(cluster, group, "--from-file", str(plan_file), "--execute") == exported
    again = consume(cluster, "--group", group, "--max-messages", str(RECORDS), "--timeout-ms", "5000")
    assert len(again.stdout.splitlines()) == RECORDS  # everything again, from the reset offsets


def test_delete_offsets_then_delete_the_group(cluster, produced):
    group = "to-delete"
    assert consume(cluster, "--group", group, "--from-beginning", "--max-messages", "3").returncode == 0
    deleted = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--delete-offsets", "--group", group,
                      "--topic", f"{TOPIC}:0")
    assert deleted.returncode == 0
    assert deleted.stdout.splitlines()[0] == f"Request succeeded for deleting offsets from group {group}."
    assert table(deleted.stdout, "TOPIC") == [{"TOPIC": TOPIC, "PARTITION": "0", "STATUS": "Successful"}]
    assert 0 not in _committed(cluster, group)
    gone = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--delete", "--group", group)
    assert gone.returncode == 0 and gone.stdout == f"Deletion of requested consumer groups ('{group}') was successful.\n"
    listed = pykraft("consumer-groups", "--bootstrap-server", brokers(cluster), "--list")
    assert group not in listed.stdout.split()


def test_get_offsets_times_and_patterns(cluster, produced):
    ends = offsets(cluster, TOPIC)
    assert offsets(cluster, TOPIC, "earliest") == {p: 0 for p in range(3)}
    assert offsets(cluster, TOPIC, "-1") == ends
    by_time = offsets(cluster, TOPIC, str(int(time.time() * 1000) - 3_600_000))
    assert by_time == {p: 0 for p, e in ends.items() if e}  # empty partitions have no such offset: left out
    done = pykraft("get-offsets", "--bootstrap-server", brokers(cluster), "--topic-partitions", f"{TOPIC}:1-")
    assert done.returncode == 0 and done.stdout.splitlines() == [f"{TOPIC}:1:{ends[1]}", f"{TOPIC}:2:{ends[2]}"]


def test_the_perf_tools_report_kafkas_lines_and_move_the_offsets(cluster):
    create_topic(cluster, "perf", 1)
    produced = pykraft("producer-perf-test", "--topic", "perf", "--num-records", "500", "--record-size", "50",
                       "--throughput", "-1", "--producer-props", f"bootstrap.servers={brokers(cluster)}", "acks=all")
    assert produced.returncode == 0, produced.stderr
    summary = produced.stdout.splitlines()[-1]
    assert summary.startswith("500 records sent, ") and summary.endswith(" ms 99.9th.")
    assert " records/sec (" in summary and " MB/sec), " in summary and " ms 50th, " in summary
    assert offsets(cluster, "perf") == {0: 500}
    consumed = pykraft("consumer-perf-test", "--bootstrap-server", brokers(cluster), "--topic", "perf",
                       "--messages", "500")
    assert consumed.returncode == 0, consumed.stderr
    header, line = consumed.stdout.splitlines()
    assert header == ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                      "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    cells = line.split(", ")
    assert len(cells) == 10 and cells[4] == "500" and float(cells[2]) == pytest.approx(500 * 50 / 1024 / 1024, abs=1e-4)


def test_dump_log_prints_the_records_of_a_user_topic(cluster, produced):
    partition = partition_for_key(b"alpha", 3)
    segments = sorted(cluster.root.glob(f"node-*/data/{TOPIC}-{partition}/00000000000000000000.log"))
    assert len(segments) == 3  # every replica has it
    done = pykraft("dump-log", "--print-data-log", "--files", str(segments[0]))
    assert done.returncode == 0, done.stderr
    printed = [line.split(" key: ")[1] for line in done.stdout.splitlines() if " key: " in line]
    assert printed == [f"{k} payload: {v}" for k, v in produced if partition_for_key(k.encode(), 3) == partition]


def test_bad_invocations_are_one_line_with_kafkas_exit_status(cluster, produced):
    unknown = _describe(cluster, "no-such-group")
    assert unknown.returncode == 1 and unknown.stdout.strip() == "Error: Consumer group 'no-such-group' does not exist."
    no_topic = pykraft("get-offsets", "--bootstrap-server", brokers(cluster), "--topic", "missing")
    assert no_topic.returncode == 1
    assert no_topic.stderr == "Error occurred: Could not match any topic-partitions with the specified filters\n"
    dead = pykraft("consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "2000")
    assert dead.returncode == 1 and dead.stderr == ""
    assert dead.stdout.strip() == ("Error: Executing consumer group command failed due to cannot reach any bootstrap "
                                   "server (127.0.0.1:1: connection refused)")
    missing_flag = consume(cluster, "--partition", "0", "--offset", "x")
    assert missing_flag.returncode == 1 and missing_flag.stdout == ""
    assert missing_flag.stderr == ("pykraft console-consumer: The provided offset value 'x' is incorrect. Valid "
                                   "values are 'earliest', 'latest', or a non-negative long.\n")
