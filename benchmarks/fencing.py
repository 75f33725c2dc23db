"""How fast the controller reacts to brokers going away: 3 controllers + 3 brokers as real processes.

Run: .venv/bin/python benchmarks/fencing.py [--rounds N] [--session-ms MS]

Each round, for one broker in turn (a topic of 6 partitions, replication factor 3, exists):
- SIGKILL it, then time until the active controller's image shows it fenced and in no ISR (the sole member of a
  leaderless partition excepted). Kafka's bound is the session timeout plus one fencing check, so the time is
  reported against `broker.session.timeout.ms` as the peer figure measured in the same run: ratio = time / session;
- restart it, time until it is registered, unfenced and back in every ISR (through its leaders' AlterPartition);
- SIGTERM it, time until the process exits after its controlled shutdown (the controller first moves its
  leaderships away), reported against the heartbeat interval (one heartbeat round trip is the floor);
- start it again for the next round.
The image is read through the admin client (Metadata and DescribeCluster of the active controller). Prints one line
per round, the medians, and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import tempfile
import time
from pathlib import Path

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import AdminClientError
from pykraft.node.local_cluster import LocalCluster

TOPIC = "fencing-bench"
POLL_S = 0.02


async def _image(admin: AdminClient) -> tuple[dict[int, bool], list]:
    brokers = {b.broker_id: b.fenced for b in await admin.list_brokers()}
    (topic,) = await admin.describe_topics([TOPIC])
    return brokers, topic.partitions


async def _wait(admin: AdminClient, done, timeout_s: float = 120) -> float:  # predicate
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        try:
            if done(*await _image(admin)):
                return time.monotonic() - start
        except AdminClientError:
            pass
        await asyncio.sleep(POLL_S)
    raise TimeoutError("the cluster did not reach the expected state")


def _fenced_and_out(broker: int):
    def check(brokers: dict[int, bool], partitions: list) -> bool:
        return brokers.get(broker) is True and all(
            p.leader != broker and (broker not in p.isr or tuple(p.isr) == (broker,)) for p in partitions)
    return check


def _back(broker: int):
    def check(brokers: dict[int, bool], partitions: list) -> bool:
        return brokers.get(broker) is False and all(broker in p.isr and p.leader >= 0 for p in partitions)
    return check


async def _run(cluster: LocalCluster, rounds: int) -> list[dict[str, float]]:
    controllers = [cluster.nodes[c].address for c in cluster.controller_ids]
    results = []
    async with AdminClient(controllers, deadline_ms=60_000) as admin:
        brokers = cluster.broker_ids
        while True:  # every broker registered and unfenced before the topic is placed on them
            try:
                listed = {b.broker_id: b.fenced for b in await admin.list_brokers()}
                if all(listed.get(b) is False for b in brokers):
                    break
            except AdminClientError:
                pass
            await asyncio.sleep(0.2)
        await admin.create_topics(TOPIC, 6, 3)
        for round_index in range(rounds):
            broker = brokers[round_index % len(brokers)]
            await _wait(admin, lambda listed, parts: all(_back(b)(listed, parts) for b in brokers))
            cluster.kill(broker)
            fence_s = await _wait(admin, _fenced_and_out(broker))
            cluster.start(broker)
            rejoin_s = await _wait(admin, _back(broker))
            start = time.monotonic()
            cluster.signal(broker, signal.SIGTERM)
            code = await asyncio.to_thread(cluster.nodes[broker].process.wait, 120)
            shutdown_s = time.monotonic() - start
            cluster.start(broker)
            row = {"broker": broker, "fence_s": fence_s, "rejoin_s": rejoin_s, "shutdown_s": shutdown_s,
                   "exit_code": code}
            print(f"round {round_index + 1}: broker {broker} fenced {fence_s:.2f} s after SIGKILL, back in every "
                  f"ISR {rejoin_s:.2f} s after restart, controlled shutdown {shutdown_s:.2f} s (exit {code})",
                  flush=True)
            results.append(row)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--session-ms", type=int, default=3000)
    parser.add_argument("--heartbeat-ms", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykraft-fencing-") as root:
        cluster = LocalCluster(Path(root), controllers=3, brokers=3, properties={
            "broker.session.timeout.ms": str(args.session_ms),
            "broker.heartbeat.interval.ms": str(args.heartbeat_ms)})
        cluster.format_all()
        cluster.start_all()
        try:
            rows = asyncio.run(_run(cluster, args.rounds))
        finally:
            cluster.stop_all()
    fence = statistics.median(r["fence_s"] for r in rows)
    shutdown = statistics.median(r["shutdown_s"] for r in rows)
    print(f"median fencing after SIGKILL {fence:.2f} s = {fence * 1000 / args.session_ms:.2f} x the session "
          f"timeout ({args.session_ms} ms); median controlled shutdown {shutdown:.2f} s = "
          f"{shutdown * 1000 / args.heartbeat_ms:.1f} x the heartbeat interval ({args.heartbeat_ms} ms)")
    print(json.dumps({"session_ms": args.session_ms, "heartbeat_ms": args.heartbeat_ms, "rounds": rows,
                      "fence_over_session": fence * 1000 / args.session_ms,
                      "shutdown_over_heartbeat": shutdown * 1000 / args.heartbeat_ms}))


if __name__ == "__main__":
    main()
