"""A restarted broker serves clients only once it has caught up with the metadata log (Kafka's BrokerServer opens
its listeners after the broker is unfenced), with real processes.

Brokers are SIGKILLed and restarted one after the other under a librdkafka (confluent-kafka) idempotent producer,
while a probe asks the restarting broker for Metadata as often as it can. Before this was built, a restarted broker
answered for 0.3-1.4 s from an empty image: the controllers listed as its brokers and UNKNOWN_TOPIC_OR_PARTITION
for the topic, which librdkafka takes for a deleted topic (it failed its queued messages). Now the probe gets
connection refused, then answers that list brokers only and know the topic, and no message fails."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import pytest
from kio.schema.metadata.v12 import request as md_v12
from kio.schema.types import TopicName

from pykraft.net.client import Connection
from pykraft.net.errors import NetError
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode

from .data_plane_checks import partition, start_cluster, stop_cluster
from .helpers import wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")
TOPIC = "chaos"
PARTITIONS = 3


@dataclass
class Probe:
    """Metadata asked of one broker in a loop, from a thread: every answer's broker ids and topic error."""

    port: int
    controllers: set[int]
    answers: list[tuple[set[int], int]] = field(default_factory=list)
    refused: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        request = md_v12.MetadataRequest(topics=(md_v12.MetadataRequestTopic(topic_id=None, name=TopicName(TOPIC)),),
                                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        while not self._stop.is_set():
            try:
                answer = asyncio.run(self._ask(request))
            except (NetError, OSError):
                self.refused += 1
                time.sleep(0.02)
                continue
            self.answers.append(({int(b.node_id) for b in answer.brokers}, int(answer.topics[0].error_code)))

    async def _ask(self, request: md_v12.MetadataRequest) -> md_v12.MetadataRequest:
        connection = await Connection.open("127.0.0.1", self.port, connect_timeout_ms=1000)
        try:
            payload = await connection.request(
                lambda cid: encode_request(request, correlation_id=cid, client_id="catch-up-probe")[4:],
                timeout_ms=5000)
        finally:
            await connection.close()
        return decode_response(payload, int(request.__api_key__), int(request.__version__)).message

    def stop(self) -> None:
        self._stop.set()


def _in_sync(cluster) -> bool:  # LocalCluster
    return all((p := partition(cluster, TOPIC, i)) is not None and len(p.isr) == 3 for i in range(PARTITIONS))


def test_restarted_brokers_serve_only_once_caught_up_and_librdkafka_loses_no_message(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", TOPIC, partitions=PARTITIONS)
    try:
        controllers = set(cluster.controller_ids)
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
        failures: list[str] = []
        delivered: set[int] = set()

        def on_delivery(error, message) -> None:  # librdkafka's
            if error is not None:
                failures.append(f"{error.name()}: {error.str()}")
            else:
                delivered.add(int(message.value()))

        producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                                             "message.timeout.ms": 120_000, "retry.backoff.ms": 100,
                                             "topic.metadata.refresh.interval.ms": 500, "linger.ms": 5})
        probes: list[Probe] = []
        done = threading.Event()

        def restarts() -> None:
            try:
                for broker in cluster.broker_ids:
                    time.sleep(1.0)
                    cluster.kill(broker)
                    probe = Probe(cluster.nodes[broker].port, controllers)
                    probes.append(probe)
                    threading.Thread(target=probe.run, daemon=True).start()
                    cluster.start(broker)
                    # Serving again (it answers the probe: re-registered and unfenced), then back in every ISR.
                    wait_for(lambda: probe.answers and _in_sync(cluster), f"broker {broker} serving and back in "
                             "every ISR", timeout=90)
                    probe.stop()
            finally:
                done.set()

        chaos = threading.Thread(target=restarts, daemon=True)
        chaos.start()
        sent = 0
        while not done.is_set():
            producer.produce(TOPIC, str(sent).encode(), on_delivery=on_delivery)
            sent += 1
            producer.poll(0)
            time.sleep(0.005)
        chaos.join(10)
        assert producer.flush(120) == 0
        assert failures == [], failures[:10]
        assert delivered == set(range(sent)) and sent > 500
        for probe in probes:
            assert probe.answers and probe.refused, "refused while catching up, then answered"
            for brokers, error in probe.answers:
                assert not brokers & controllers, f"a broker presented controllers {brokers & controllers} as brokers"
                assert brokers <= set(cluster.broker_ids) and brokers
                assert error == ErrorCode.NONE, f"the topic answered {ErrorCode(error).name}"
    finally:
        stop_cluster(cluster)
