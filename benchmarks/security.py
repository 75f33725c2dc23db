"""The cost of security on the produce path: the same Produce requests to a broker without security (PLAINTEXT, no
authorizer) and to a broker with SASL/SCRAM-SHA-256 and the StandardAuthorizer holding many ACLs, in the same run.

Run: .venv/bin/python benchmarks/security.py [--requests N] [--acls N] [--records R]

Two clusters of real processes (one controller and one broker each) are started side by side. On each, one client
connection (pykraft's own, so the client's cost is the same on both sides: the secured one authenticates once) sends
N Produce v9 requests one after the other (acks=1, R records of 100 bytes each) to one partition, and the broker
process's CPU time (user+system from /proc) is read before and after. Printed per side: the requests per second,
p50/p99 latency, broker CPU microseconds per request; then the ratios secured/plain, and one JSON line. The secured
broker authorizes every request against `--acls` ACLs (all on other topics, one prefixed ACL granting the write), so
the figure includes the authorizer's lookups, not only SASL's one-time handshake.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.net.client import Connection
from pykraft.net.sasl_client import SaslClientConfig
from pykraft.node.local_cluster import LocalCluster
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.records.batch import SimpleRecord, encode_batch

TOPIC = "bench-topic"
SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
PLAIN = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
         'user_admin="admin-secret";')
TIMING = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000",
          "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "3000"}


def secured_properties() -> dict[str, str]:
    props = {"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT",
             "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256", "sasl.mechanism.controller.protocol": "PLAIN",
             "sasl.mechanism.inter.broker.protocol": "PLAIN", "super.users": "User:admin",
             "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    for listener in ("controller", "plaintext"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN
        props[f"listener.name.{listener}.scram-sha-256.sasl.jaas.config"] = SCRAM
    return props


def start(root: Path, props: dict[str, str], scram: bool) -> LocalCluster:
    cluster = LocalCluster(root, controllers=1, brokers=1, properties={**TIMING, **props})
    voters = ",".join(n.voter_spec for n in cluster.nodes.values() if n.initial_voter)
    for node in cluster.nodes.values():
        extra = ("--add-scram", "SCRAM-SHA-256=[name=bench,password=bench-secret]") if scram else ()
        cluster.format(node, *(() if node.is_broker else ("--initial-controllers", voters, *extra)))
    cluster.start_all()
    return cluster


def tool(cluster: LocalCluster, secured: bool, *args: str) -> bool:
    config = cluster.root / "admin.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN}\n")
    flags = ["--command-config", str(config)] if secured else []
    broker = cluster.nodes[cluster.broker_ids[0]]
    name, rest = args[0], list(args[1:])
    if name == "topics":
        rest = [rest[0], "--bootstrap-server", f"127.0.0.1:{broker.port}", *flags, *rest[1:]]
    else:
        rest = ["--bootstrap-server", f"127.0.0.1:{broker.port}", *flags, *rest]
    return cluster.cli(name, *rest, check=False, timeout=120).returncode == 0


def wait(probe, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.3)
    raise TimeoutError(what)


def prepare(cluster: LocalCluster, secured: bool, acls: int) -> None:
    wait(lambda: tool(cluster, secured, "topics", "create", "--topic", TOPIC, "--partitions", "1",
                      "--replication-factor", "1"), "the topic created")
    if not secured:
        return
    assert tool(cluster, True, "acls", "--add", "--allow-principal", "User:bench", "--operation", "Write",
                "--topic", "bench-", "--resource-pattern-type", "prefixed")
    for start_index in range(0, acls, 50):  # many ACLs on other resources: the authorizer's lookups are not free
        topics = [a for i in range(start_index, min(acls, start_index + 50)) for a in ("--topic", f"other-{i}")]
        assert tool(cluster, True, "acls", "--add", "--allow-principal", "User:someone", "--operation", "Read",
                    *topics)


def produce_request(records: int, index: int) -> ProduceRequest:
    batch = encode_batch([SimpleRecord(value=bytes(100)) for _ in range(records)], base_offset=0,
                         partition_leader_epoch=-1, timestamp_ms=index)
    return ProduceRequest(transactional_id=None, acks=i16(1),
                          timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
                          topic_data=(TopicProduceData(name=TOPIC, partition_data=(
                              PartitionProduceData(index=i32(0), records=batch),)),))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_side(cluster: LocalCluster, sasl: SaslClientConfig | None, requests: int, records: int) -> dict:
    broker = cluster.nodes[cluster.broker_ids[0]]
    conn = await Connection.open("127.0.0.1", broker.port, sasl=sasl)
    message = produce_request(records, 0)
    latencies = []
    try:
        for _warm in range(50):
            await conn.request(lambda cid: encode_request(message, correlation_id=cid, client_id="bench")[4:],
                               timeout_ms=10_000)
        cpu_before, started = cpu_seconds(broker.process.pid), time.perf_counter()
        for _ in range(requests):
            sent = time.perf_counter()
            payload = await conn.request(lambda cid: encode_request(message, correlation_id=cid,
                                                                    client_id="bench")[4:], timeout_ms=10_000)
            latencies.append(time.perf_counter() - sent)
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds(broker.process.pid) - cpu_before
        answer = decode_response(payload, 0, 9).message
        error = int(answer.responses[0].partition_responses[0].error_code)
        assert error == 0, f"the last Produce answered error {error}"
    finally:
        await conn.close()
    latencies.sort()
    return {"requests_per_s": requests / elapsed, "p50_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000, "broker_cpu_us": cpu / requests * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--acls", type=int, default=500)
    parser.add_argument("--records", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-security-") as tmp:
        plain = start(Path(tmp) / "plain", {}, scram=False)
        secured = start(Path(tmp) / "secured", secured_properties(), scram=True)
        try:
            prepare(plain, False, 0)
            prepare(secured, True, options.acls)
            results = {}
            for name, cluster, sasl in (("plain", plain, None), ("secured", secured,
                                        SaslClientConfig("SCRAM-SHA-256", "bench", "bench-secret"))):
                results[name] = asyncio.run(run_side(cluster, sasl, options.requests, options.records))
                r = results[name]
                print(f"{name:8s} {r['requests_per_s']:8.0f} req/s  p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms"
                      f"  broker CPU {r['broker_cpu_us']:.0f} us/request")
            ratios = {key: results["secured"][key] / results["plain"][key] for key in results["plain"]}
            print(f"secured/plain: throughput {ratios['requests_per_s']:.3f}x, p50 {ratios['p50_ms']:.3f}x, "
                  f"broker CPU per request {ratios['broker_cpu_us']:.3f}x ({options.acls} ACLs)")
            print(json.dumps({"benchmark": "security", "acls": options.acls, **results, "ratios": ratios}))
        finally:
            secured.stop_all()
            plain.stop_all()


if __name__ == "__main__":
    main()
