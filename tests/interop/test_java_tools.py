"""Kafka's own Java client as the judge of pykraft's tools (ToolsJudge.java): what `pykraft console-producer`
wrote is what Kafka's consumer reads (keys, headers, and the partitions Kafka's partitioner picks); what Kafka's
producer wrote is what `pykraft console-consumer` prints; the offsets `pykraft consumer-groups` commits and resets
are the ones Kafka's Admin lists."""

from __future__ import annotations

import pytest

from pykraft.admin.partitioner import partition_for_key

from tests.e2e.tools_cluster import pykraft, table

from .conftest import brokers_of
from .java_programs import failures


@pytest.fixture(scope="module")
def topic(java_cluster):
    done = pykraft("topics", "--create", "--bootstrap-server", brokers_of(java_cluster), "--topic", "judged",
                   "--partitions", "3", "--replication-factor", "3")
    assert done.returncode == 0, done.stderr
    lines = [f"src:pykraft,n:{i}\tkey-{i % 4}\tvalue-{i}" for i in range(20)]
    produced = pykraft("console-producer", "--bootstrap-server", brokers_of(java_cluster), "--topic", "judged",
                       "--property", "parse.key=true", "--property", "parse.headers=true",
                       stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stdout + produced.stderr
    consumed = pykraft("console-consumer", "--bootstrap-server", brokers_of(java_cluster), "--topic", "judged",
                       "--group", "judged-group", "--from-beginning", "--max-messages", "7", "--timeout-ms", "60000")
    assert consumed.returncode == 0 and len(consumed.stdout.splitlines()) == 7, consumed.stderr
    return lines


def test_kafkas_consumer_reads_what_console_producer_wrote(java, java_cluster, topic):
    results = java.run("ToolsJudge", "read", brokers_of(java_cluster), "judged", "judged-group")
    assert not failures(results, ["records"])
    read = [line.split("|") for line in results["records"].detail]
    assert len(read) == len(topic)
    for line in topic:
        headers, key, value = line.split("\t")
        index = int(value.split("-")[1])
        (found,) = [r for r in read if r[3] == value]
        assert int(found[0]) == partition_for_key(key.encode(), 3) and found[2] == key
        assert found[4] == f"src=pykraft,n={index}"


def test_kafkas_admin_lists_the_offsets_the_tools_committed_and_reset(java, java_cluster, topic):
    brokers = brokers_of(java_cluster)
    described = pykraft("consumer-groups", "--bootstrap-server", brokers, "--describe", "--group", "judged-group")
    ours = {f"judged-{r['PARTITION']}": int(r["CURRENT-OFFSET"]) for r in table(described.stdout, "GROUP")}
    results = java.run("ToolsJudge", "read", brokers, "judged", "judged-group")
    assert not failures(results, ["group_offsets", "group_state"])
    assert results["group_offsets"].detail == ours and sum(ours.values()) == 7
    assert results["group_state"].detail == "Empty"
    reset = pykraft("consumer-groups", "--bootstrap-server", brokers, "--reset-offsets", "--group", "judged-group",
                    "--to-earliest", "--all-topics", "--execute")
    assert reset.returncode == 0, reset.stdout
    after = java.run("ToolsJudge", "read", brokers, "judged", "judged-group")
    assert after["group_offsets"].detail == {tp: 0 for tp in ours}


def test_console_consumer_prints_what_kafkas_producer_wrote(java, java_cluster):
    brokers = brokers_of(java_cluster)
    done = pykraft("topics", "--create", "--bootstrap-server", brokers, "--topic", "from-java", "--partitions", "3",
                   "--replication-factor", "3")
    assert done.returncode == 0, done.stderr
    assert not failures(java.run("ToolsJudge", "produce", brokers, "from-java", "-"), ["produce"])
    printed = pykraft("console-consumer", "--bootstrap-server", brokers, "--topic", "from-java", "--from-beginning",
                      "--max-messages", "24", "--property", "print.key=true", "--property", "print.headers=true",
                      "--property", "print.partition=true")
    assert printed.returncode == 0, printed.stderr
    rows = [line.split("\t") for line in printed.stdout.splitlines()]
    assert sorted(int(v.split("-")[1]) for *_, v in rows) == list(range(24))
    for partition, headers, key, value in rows:
        assert headers == "origin:java" and key == f"key-{int(value.split('-')[1]) % 5}"
        assert int(partition.removeprefix("Partition:")) == partition_for_key(key.encode(), 3)
