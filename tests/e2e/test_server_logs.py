"""Issue 29: the logs of real processes say what Kafka's say, in Kafka's layout.

One cluster of 3 controllers and 2 brokers goes through a controller failover, a broker paused past its session
(fenced, then unfenced) and a controlled shutdown, and every node's log is read: the new leader is named on every node,
the fencing names the broker and the reason, the controlled shutdown shows its steps, the default lines are Kafka's
`[%d] %p %m (%c)` and a node set to `pykraft.log.format=json` writes JSON lines; `pykraft.logs.dir` gets server.log.
Nothing in these expected events is logged above INFO. Waits poll with deadlines; nothing asserts a duration."""

from __future__ import annotations

import json
import re
import signal

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.node.logs import LOG_FILE, TEXT_LINE

from .helpers import FAST_TIMEOUTS, leader_status, wait_for

KAFKA_LINE = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) .* \([\w.]+\)")
JSON_NODE, FILE_NODE = 2, 3
TIMING = {**FAST_TIMEOUTS, "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300"}


@pytest.fixture
def cluster(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=3, brokers=2, properties=TIMING)
    cluster.nodes[JSON_NODE].extra["pykraft.log.format"] = "json"
    cluster.nodes[FILE_NODE].extra["pykraft.logs.dir"] = str(tmp_path / "logs-3")
    cluster.format_all()
    cluster.start_all()
    yield cluster
    for node in cluster.nodes.values():
        if node.is_running():
            cluster.signal(node.node_id, signal.SIGCONT)
    cluster.stop_all(timeout=30)


def messages(cluster: LocalCluster, node_id: int) -> list[str]:
    """The messages of a node's log, whatever its format."""
    lines = cluster.server_log(node_id).splitlines()
    if node_id == JSON_NODE:
        return [json.loads(line)["event"] for line in lines]
    return [match["message"] for line in lines if (match := TEXT_LINE.match(line)) is not None]


def logged(cluster: LocalCluster, node_id: int, *parts: str) -> list[str]:
    return [m for m in messages(cluster, node_id) if all(p in m for p in parts)]


def test_failover_fencing_and_shutdown_are_logged_like_kafka(cluster, tmp_path):
    status = wait_for(lambda: leader_status(cluster, cluster.controller_ids), "a leader")
    first = int(status["LeaderId"])
    brokers = cluster.broker_ids
    wait_for(lambda: all(logged(cluster, b, "Transitioning from RECOVERY to RUNNING") for b in brokers),
             "both brokers running")

    # A controller failover: SIGTERM to the leader (it resigns); every other node names the new leader.
    cluster.stop(first)
    others = [c for c in cluster.controller_ids if c != first]
    status = wait_for(lambda: (s := leader_status(cluster, others)) and int(s["LeaderId"]) != first and s,
                      "a new leader")
    second, epoch = int(status["LeaderId"]), int(status["LeaderEpoch"])
    assert logged(cluster, second, "[RaftManager id=", f"Completed transition to Leader(epoch={epoch}")
    for node in (*others, *brokers):
        wait_for(lambda n=node: logged(cluster, n, f"Follower(epoch={epoch}, leader={second}")
                 or logged(cluster, n, f"Leader(epoch={epoch}"), f"node {node}'s raft transition")
        what = "the active controller is node" if node in others else "The active controller is now node"
        wait_for(lambda n=node, w=what: logged(cluster, n, f"{w} {second}", str(epoch)),
                 f"node {node} naming the new active controller")
    assert logged(cluster, first, "Completed transition to Resigned")  # the old leader said it stepped down

    # A broker paused past its session: fenced, with the reason, and unfenced once it heartbeats again.
    paused = brokers[1]
    cluster.signal(paused, signal.SIGSTOP)
    fenced = wait_for(lambda: logged(cluster, second, f"Fencing broker {paused} because its session has timed out"),
                      "the fencing logged by the active controller")
    assert "broker.session.timeout.ms=3000" in fenced[0]
    cluster.signal(paused, signal.SIGCONT)
    wait_for(lambda: logged(cluster, second, f"Unfencing broker {paused}", "caught up"), "the unfencing logged")

    # A controlled shutdown, step by step on the broker and on the controller.
    assert cluster.stop(brokers[0]) == 0
    steps = messages(cluster, brokers[0])
    begin = next(i for i, m in enumerate(steps) if "Beginning controlled shutdown" in m)
    allowed = next(i for i, m in enumerate(steps) if "The controller allowed the controlled shutdown" in m)
    done = next(i for i, m in enumerate(steps) if m.startswith("controlled shutdown done"))
    assert begin < allowed < done
    assert [m for m in messages(cluster, second) if f"broker {brokers[0]}" in m.lower() and "shut down" in m]

    cluster.stop_all(timeout=30)
    for node in cluster.nodes:
        text = cluster.server_log(node)
        assert "graceful=False" not in text and "graceful=True" not in text
        if node == JSON_NODE:  # the setting: JSON lines, structlog's keys
            for line in text.splitlines():
                event = json.loads(line)
                assert list(event)[:4] == ["event", "level", "logger", "timestamp"] and event["node_id"] == node
                assert event["level"] in ("debug", "info"), event
            continue
        for line in text.splitlines():  # the default: Kafka's layout, and nothing above INFO in these events
            assert KAFKA_LINE.fullmatch(line), line
            assert TEXT_LINE.match(line)["level"] == "INFO", line
    # pykraft.logs.dir: server.log there holds the same lines as the process's own output
    in_file = (tmp_path / "logs-3" / LOG_FILE).read_text().splitlines()
    assert in_file and in_file == cluster.server_log(FILE_NODE).splitlines()
    last = [m for m in messages(cluster, second) if "Shutdown complete" in m]
    assert last, "the last controller says how its raft shutdown ended"
