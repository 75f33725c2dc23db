"""The tree `metadata-shell` shows: Kafka 4's metadata shell nodes over a replayed image (metadata_image.py).

    /local/version, /local/commitId
    /image/provenance                       offset N, epoch E, time <ISO time>
    /image/features/metadataVersion, zkMigrationState, finalized_<feature>
    /image/cluster/brokers/<id>             BrokerRegistration(id=1, epoch=..., listeners=[...], ...)
    /image/cluster/controllers/<id>         ControllerRegistration(id=..., ...)
    /image/topics/byName/<topic>/{name, id, <partition>}   and   /image/topics/byId/<id>/...
    /image/configs/<TYPE>[:<name>]/<key>    e.g. TOPIC:events/retention.ms, BROKER (the cluster default)
    /image/producerIds/nextProducerId
    /image/clientQuotas, /image/acls, /image/scram, /image/delegationToken   (empty: pykraft keeps none)
Leaves print as Kafka's `toString()` of the same objects. Pure: an image in, nodes out.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.format_options import metadata_version_name

from .metadata_image import LoadedImage
from .versions import version_line

METADATA_VERSION = "metadata.version"
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONFIG_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}


@dataclass
class Node:
    """A directory (`children`: name -> how to build the child) or a leaf (`text`)."""

    # (called without arguments; `...` because mypy cannot type a lambda that binds a loop value as a default)
    children: Mapping[str, Callable[..., Node]] | None = None
    text: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def is_directory(self) -> bool:
        return self.children is not None

    def names(self) -> list[str]:
        return sorted(self.children or {})

    def child(self, name: str) -> Node | None:
        build = (self.children or {}).get(name)
        return None if build is None else build()


def leaf(text: str) -> Node:
    return Node(text=text)


def directory(children: Mapping[str, Callable[..., Node]]) -> Node:
    return Node(children=dict(children))


def _uuid(value: Any) -> str:
    return "null" if value is None else uuid_to_kafka_str(value)


def _ints(values: Any) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def _range(low: int, high: int) -> str:
    """Kafka's VersionRange.toString."""
    return str(low) if low == high else f"{low}+" if high == 0x7FFF else f"{low}-{high}"


def _endpoints(listeners: Any) -> str:
    return ", ".join(f"Endpoint(listenerName='{e.name}', securityProtocol="
                     f"{SECURITY_PROTOCOLS.get(e.security_protocol, e.security_protocol)}, host='{e.host}', "
                     f"port={e.port})" for e in sorted(listeners, key=lambda e: e.name))


def _features(features: Any) -> str:
    return ", ".join(f"{n}: {_range(r.min_version, r.max_version)}"
                     for n, r in sorted(features))


def broker_text(r: Any) -> str:
    rack = f"Optional[{r.rack}]" if r.rack is not None else "Optional.empty"
    return (f"BrokerRegistration(id={r.broker_id}, epoch={r.epoch}, incarnationId={_uuid(r.incarnation_id)}, "
            f"listeners=[{_endpoints(r.listeners)}], supportedFeatures={{{_features(r.features)}}}, "
            f"rack={rack}, fenced={str(r.fenced).lower()}, "
            f"inControlledShutdown={str(r.in_controlled_shutdown).lower()}, "
            f"isMigratingZkBroker={str(r.is_migrating_zk_broker).lower()}, "
            f"directories=[{', '.join(_uuid(d) for d in r.log_dirs)}])")


def controller_text(r: Any) -> str:
    return (f"ControllerRegistration(id={r.controller_id}, incarnationId={_uuid(r.incarnation_id)}, "
            f"zkMigrationReady={str(r.zk_migration_ready).lower()}, listeners=[{_endpoints(r.listeners)}], "
            f"supportedFeatures={{{_features(r.features)}}})")


def partition_text(p: Any) -> str:
    return (f"PartitionRegistration(replicas={_ints(p.replicas)}, "
            f"directories=[{', '.join(_uuid(d) for d in p.directories)}], isr={_ints(p.isr)}, "
            f"removingReplicas={_ints(p.removing_replicas)}, addingReplicas={_ints(p.adding_replicas)}, "
            f"elr={_ints(p.elr)}, lastKnownElr={_ints(p.last_known_elr)}, leader={p.leader}, "
            f"leaderRecoveryState={p.leader_recovery_state.name}, leaderEpoch={p.leader_epoch}, "
            f"partitionEpoch={p.partition_epoch})")


def provenance_text(offset: int, epoch: int, time_ms: int) -> str:
    """Kafka's ProvenanceNode: the time as ISO_ZONED_DATE_TIME in UTC (`...Z[UTC]`)."""
    moment = datetime.datetime.fromtimestamp(max(time_ms, 0) / 1000, tz=datetime.timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return f"offset {offset}, epoch {epoch}, time {text}Z[UTC]"


def _topic(info: Any) -> Node:
    children: dict[str, Callable[..., Node]] = {"name": lambda: leaf(info.name),
                                               "id": lambda: leaf(uuid_to_kafka_str(info.topic_id))}
    for pid, registration in info.partitions.items():
        children[str(pid)] = lambda r=registration: leaf(partition_text(r))
    return directory(children)


def _configs(configs: Mapping[tuple[int, str], Mapping[str, str]]) -> Node:
    children: dict[str, Callable[..., Node]] = {}
    for (kind, name), values in configs.items():
        label = CONFIG_TYPES.get(kind, "UNKNOWN") + (f":{name}" if name else "")
        children[label] = lambda v=values: directory({k: (lambda x=x: leaf(x)) for k, x in v.items()})
    return directory(children)


def _features_node(finalized: Mapping[str, int]) -> Node:
    level = finalized.get(METADATA_VERSION)
    children: dict[str, Callable[..., Node]] = {
        "metadataVersion": lambda: leaf(metadata_version_name(level) if level is not None else "UNKNOWN"),
        "zkMigrationState": lambda: leaf("NONE"),
    }
    for name, value in finalized.items():
        if name != METADATA_VERSION:
            children[f"finalized_{name}"] = lambda v=value: leaf(str(v))
    return directory(children)


def image_node(image: LoadedImage) -> Node:
    c = image.controller
    topics = list(c.replication.topics.values())
    p = image.provenance
    return directory({
        "provenance": lambda: leaf(provenance_text(p.offset, p.epoch, p.time_ms)),
        "features": lambda: _features_node(c.features.finalized),
        "cluster": lambda: directory({
            "brokers": lambda: directory({str(i): (lambda r=r: leaf(broker_text(r)))
                                          for i, r in c.cluster.brokers.items()}),
            "controllers": lambda: directory({str(i): (lambda r=r: leaf(controller_text(r)))
                                              for i, r in c.cluster.controllers.items()})}),
        "topics": lambda: directory({
            "byName": lambda: directory({t.name: (lambda t=t: _topic(t)) for t in topics}),
            "byId": lambda: directory({uuid_to_kafka_str(t.topic_id): (lambda t=t: _topic(t)) for t in topics})}),
        "configs": lambda: _configs(c.configs.configs),
        "clientQuotas": lambda: directory({}),
        "producerIds": lambda: directory({"nextProducerId": lambda: leaf(str(c.producer_ids.next_producer_id))}),
        "acls": lambda: directory({}),
        "scram": lambda: directory({}),
        "delegationToken": lambda: directory({}),
    })


def root_node(image: LoadedImage) -> Node:
    return directory({
        "local": lambda: directory({"version": lambda: leaf(version_line().split()[-1]),
                                    "commitId": lambda: leaf("unknown")}),
        "image": lambda: image_node(image),
    })
