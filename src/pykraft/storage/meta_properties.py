"""`meta.properties` (reference §3.6): which cluster, node and directory a log directory belongs to.

Java properties format, as Kafka writes it: a comment line, then `key=value` lines. Version 1 (KRaft) has
`cluster.id`, `node.id` and `directory.id`; version 0 (ZooKeeper era) had `broker.id`. Written atomically
(temporary file, fsync, rename, directory fsync) like Kafka's `PropertiesUtils.writePropertiesFile`.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from pykraft.records.uuids import kafka_str_to_uuid, uuid_to_kafka_str

from .errors import MetaPropertiesError
from .files import atomic_write

META_PROPERTIES = "meta.properties"


@dataclass(frozen=True, slots=True)
class MetaProperties:
    cluster_id: str
    node_id: int
    directory_id: uuid.UUID | None
    version: int = 1

    def to_text(self) -> str:
        lines = ["#", f"cluster.id={self.cluster_id}"]
        if self.directory_id is not None:
            lines.append(f"directory.id={uuid_to_kafka_str(self.directory_id)}")
        lines.append(f"{'node.id' if self.version == 1 else 'broker.id'}={self.node_id}")
        lines.append(f"version={self.version}")
        return "\n".join(lines) + "\n"

    @staticmethod
    def parse(text: str, path: str = META_PROPERTIES) -> MetaProperties:
        props = parse_properties(text)
        try:
            version = int(props["version"])
        except (KeyError, ValueError):
            raise MetaPropertiesError(f"{path}: missing or invalid 'version'") from None
        if version not in (0, 1):
            raise MetaPropertiesError(f"{path}: unsupported version {version}")
        id_key = "node.id" if version == 1 else "broker.id"
        cluster = props.get("cluster.id")
        if not cluster:
            raise MetaPropertiesError(f"{path}: missing 'cluster.id'")
        try:
            node = int(props[id_key])
        except (KeyError, ValueError):
            raise MetaPropertiesError(f"{path}: missing or invalid '{id_key}'") from None
        directory = None
        if "directory.id" in props:
            try:
                directory = kafka_str_to_uuid(props["directory.id"])
            except ValueError:
                raise MetaPropertiesError(f"{path}: invalid 'directory.id' {props['directory.id']!r}") from None
        return MetaProperties(cluster, node, directory, version)


def parse_properties(text: str) -> dict[str, str]:
    """The subset of java.util.Properties that Kafka writes: comments (# !), key=value or key:value, escapes."""
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        key, value = (line, "") if cut < 0 else (line[:cut].strip(), line[cut + 1 :].strip())
        props[_unescape(key)] = _unescape(value)
    return props


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    chars = iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)


def write_meta_properties(log_dir: str, meta: MetaProperties) -> None:
    os.makedirs(log_dir, exist_ok=True)
    atomic_write(os.path.join(log_dir, META_PROPERTIES), meta.to_text().encode())


def read_meta_properties(log_dir: str) -> MetaProperties:
    path = os.path.join(log_dir, META_PROPERTIES)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise MetaPropertiesError(f"{path} does not exist: format the directory with `pykraft storage format`") from None
    return MetaProperties.parse(text, path)


def check_meta_properties(meta: MetaProperties, *, cluster_id: str | None, node_id: int) -> None:
    """Refuse a directory that belongs to another node or cluster."""
    if meta.node_id != node_id:
        raise MetaPropertiesError(f"meta.properties says node.id={meta.node_id}, but this node is {node_id}")
    if cluster_id is not None and meta.cluster_id != cluster_id:
        raise MetaPropertiesError(f"meta.properties says cluster.id={meta.cluster_id}, expected {cluster_id}")
