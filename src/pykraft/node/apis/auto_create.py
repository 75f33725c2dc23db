"""`auto.create.topics.enable` (Kafka's default: true): a Metadata request naming unknown topics creates them.

Like Kafka's broker, the broker sends CreateTopics for the unknown names (with its `num.partitions` and
`default.replication.factor`, default 1 and 1) to the active controller when the request allows it
(AllowAutoTopicCreation, v4+; always for older versions), and answers those topics LEADER_NOT_AVAILABLE until its
metadata cache has them: the client asks again. Internal names (`__...`) and the metadata topic are never created.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from typing import TYPE_CHECKING, Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode

from pykraft.node.runtime import client_apis, metadata_api
from pykraft.node.runtime.envelope import on_behalf_of
from pykraft.node.runtime.listeners import request_listener

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.apis.broker_view import BrokerView

_log = logging.getLogger("pykraft.node.auto_create")
CREATE_TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=10))


def settings(raw: Any) -> tuple[bool, int, int]:
    """(auto.create.topics.enable, num.partitions, default.replication.factor); ValueError on a bad value."""
    enabled = str(raw.get("auto.create.topics.enable", "true")).strip().lower()
    if enabled not in ("true", "false"):
        raise ValueError(f"auto.create.topics.enable: {enabled!r} is not true or false")
    numbers = []
    for key in ("num.partitions", "default.replication.factor"):
        text = str(raw.get(key, "1")).strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"{key}: {text!r} is not a positive integer")
        numbers.append(int(text))
    return enabled == "true", numbers[0], numbers[1]


async def metadata(broker: BrokerView, decoded: DecodedRequest) -> Any:
    message = decoded.message
    enabled, partitions, replication = settings(broker.data_plane.node_config.raw)
    created: set[str] = set()
    if enabled and message.topics and getattr(message, "allow_auto_topic_creation", True):
        missing = sorted({t.name for t in message.topics if t.name and not t.name.startswith("__")
                          and broker.cache.topic_id(t.name) is None})
        if missing:
            request = ct_req.CreateTopicsRequest(timeout=CREATE_TIMEOUT, validate_only=False, topics=tuple(
                ct_req.CreatableTopic(name=TopicName(n), num_partitions=i32(partitions),
                                      replication_factor=i16(replication), assignments=(), configs=())
                for n in missing))
            # in an Envelope with the client's principal: the controller authorizes the client (Kafka's
            # AutoTopicCreationManager), whose CREATE the broker checked first (authz_data.py)
            answer = await broker.forward(on_behalf_of(decoded, request))
            created = {t.name for t in getattr(answer, "topics", ())
                       if int(t.error_code) in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)}
            new = sorted(t.name for t in getattr(answer, "topics", ()) if int(t.error_code) == ErrorCode.NONE)
            if new:
                _log.info("auto-created topics %s", new)
    runtime = broker.runtime
    assert runtime is not None
    response = metadata_api.metadata(runtime.core, runtime.cluster_id, message,
                                     client_apis.image_of(runtime.state_machine),
                                     request_listener(decoded, broker.data_plane.node_config))
    if not created:
        return response
    topics = tuple(dataclasses.replace(t, error_code=ErrorCode.LEADER_NOT_AVAILABLE)
                   if t.name in created and t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else t
                   for t in response.topics)
    return dataclasses.replace(response, topics=topics)
