"""The three stock admin clients behind one small interface, for tests against a real cluster.

kafka-python (pure Python), aiokafka (asyncio) and confluent-kafka (librdkafka): each adapter runs one admin call
and turns the client's own answer into plain values, raising `ClientError` with the client's text when the call
failed, so the tests can say the same thing to each client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

TIMEOUT_S = 20


class ClientError(Exception):
    """The admin call failed; the message is what the client reported."""


def _check_codes(pairs: list[tuple[str, int, Any]]) -> None:
    failed = [(name, code, message) for name, code, message in pairs if code]
    if failed:
        raise ClientError(f"error codes {failed}")


class KafkaPythonAdmin:
    name = "kafka-python"

    def __init__(self, bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient
        self.client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_S * 1000)

    def close(self) -> None:
        self.client.close()

    def create(self, topic: str, partitions: int, replication: int, configs: dict[str, str] | None = None) -> None:
        from kafka.admin import NewTopic
        answer = self.client.create_topics([NewTopic(topic, partitions, replication, topic_configs=configs or {})])
        _check_codes([(t["name"], t["error_code"], t["error_message"]) for t in _as_dict(answer)["topics"]])

    def partitions(self, topic: str) -> int | None:
        (described,) = self.client.describe_topics([topic])
        return None if described["error_code"] else len(described["partitions"])

    def topics(self) -> set[str]:
        return set(self.client.list_topics())

    def delete(self, topic: str) -> None:
        answer = self.client.delete_topics([topic])
        _check_codes([(t["name"], t["error_code"], t.get("error_message")) for t in _as_dict(answer)["topics"]])

    def config(self, topic: str, key: str) -> str | None:
        from kafka.admin import ConfigResource, ConfigResourceType
        answer = self.client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=[key])],
                                             config_filter="all")
        return answer["topic"][topic][key]["value"]

    def set_config(self, topic: str, key: str, value: str) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType
        answer = self.client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={key: value})])
        if answer["topic"][topic] != "OK":
            raise ClientError(str(answer))

    def add_partitions(self, topic: str, count: int) -> None:
        from kafka.admin import NewPartitions
        answer = self.client.create_partitions({topic: NewPartitions(count)})
        _check_codes([(r.name, r.error_code, r.error_message) for r in answer.results])


def _as_dict(response: Any) -> dict:
    return response if isinstance(response, dict) else response.to_object()


class AioKafkaAdmin:
    name = "aiokafka"

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _run(self, call: Callable[[Any], Any]) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        async def main() -> Any:
            client = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
            await client.start()
            try:
                return await call(client)
            finally:
                await client.close()
        return asyncio.run(main())

    def close(self) -> None:
        pass

    def create(self, topic: str, partitions: int, replication: int, configs: dict[str, str] | None = None) -> None:
        from aiokafka.admin import NewTopic
        answer = self._run(lambda c: c.create_topics([NewTopic(topic, partitions, replication,
                                                               topic_configs=configs or {})]))
        _check_codes([(t[0], t[1], t[2] if len(t) > 2 else None) for t in answer.topic_errors])

    def partitions(self, topic: str) -> int | None:
        (described,) = self._run(lambda c: c.describe_topics([topic]))
        return None if described["error_code"] else len(described["partitions"])

    def topics(self) -> set[str]:
        return set(self._run(lambda c: c.list_topics()))

    def delete(self, topic: str) -> None:
        answer = self._run(lambda c: c.delete_topics([topic]))
        _check_codes([(t[0], t[1], None) for t in answer.topic_error_codes])

    def config(self, topic: str, key: str) -> str | None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        (answer,) = self._run(lambda c: c.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
        (resource,) = answer.resources
        _check_codes([(resource[3], resource[0], resource[1])])
        return next(entry[1] for entry in resource[4] if entry[0] == key)

    def set_config(self, topic: str, key: str, value: str) -> None:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        (answer,) = self._run(lambda c: c.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                                                        configs={key: value})]))
        _check_codes([(r[3], r[0], r[1]) for r in answer.resources])

    def add_partitions(self, topic: str, count: int) -> None:
        from aiokafka.admin import NewPartitions
        answer = self._run(lambda c: c.create_partitions({topic: NewPartitions(count)}))
        _check_codes([(t[0], t[1], t[2]) for t in answer.topic_errors])


class ConfluentAdmin:
    name = "confluent-kafka"

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient
        self.client = AdminClient({"bootstrap.servers": bootstrap})

    def close(self) -> None:
        pass

    @staticmethod
    def _wait(futures: dict) -> dict:
        try:
            return {key: future.result(timeout=TIMEOUT_S) for key, future in futures.items()}
        except Exception as exc:  # KafkaException carries librdkafka's error text
            raise ClientError(str(exc)) from exc

    def create(self, topic: str, partitions: int, replication: int, configs: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import NewTopic
        self._wait(self.client.create_topics([NewTopic(topic, partitions, replication, config=configs or {})],
                                             request_timeout=TIMEOUT_S))

    def partitions(self, topic: str) -> int | None:
        listed = self.client.list_topics(topic, timeout=TIMEOUT_S).topics.get(topic)
        return None if listed is None or listed.error is not None else len(listed.partitions)

    def topics(self) -> set[str]:
        return set(self.client.list_topics(timeout=TIMEOUT_S).topics)

    def delete(self, topic: str) -> None:
        self._wait(self.client.delete_topics([topic], request_timeout=TIMEOUT_S))

    def config(self, topic: str, key: str) -> str | None:
        from confluent_kafka.admin import ConfigResource
        (entries,) = self._wait(self.client.describe_configs([ConfigResource("topic", topic)])).values()
        return entries[key].value

    def set_config(self, topic: str, key: str, value: str) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
        entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        self._wait(self.client.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[entry])]))

    def add_partitions(self, topic: str, count: int) -> None:
        from confluent_kafka.admin import NewPartitions
        self._wait(self.client.create_partitions([NewPartitions(topic, count)], request_timeout=TIMEOUT_S))


ADMINS = {admin.name: admin for admin in (KafkaPythonAdmin, AioKafkaAdmin, ConfluentAdmin)}
