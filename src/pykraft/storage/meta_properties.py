"""`meta.properties` (reference §3.6): which cluster, node and directory a log directory belongs to.

Java properties format, as Kafka writes it: a comment line, then `key=value` lines. Version 1 (KRaft) has
`cluster.id`, `node.id` and `directory.id`; version 0 (ZooKeeper era) had `broker.id`. Written atomically
(temporary file, fsync, rename, directory fsync) like Kafka's `PropertiesUtils.writePropertiesFile`.
"""

from __future__ import annotations

import os
import re
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
    """`java.util.Properties.load` semantics: the format of Kafka's server.properties and meta.properties.

    Comment lines start with # or !; a line ending in an odd number of backslashes continues on the next line
    (whose leading whitespace is dropped); the key ends at the first unescaped `=`, `:` or whitespace; escapes
    are \\t \\n \\r \\f \\uXXXX, and a backslash before any other character keeps that character.
    One deliberate difference: unescaped trailing whitespace of a value is dropped (Java keeps it), because a
    stray space after `cluster.id=...` or a number is a typo, never intended.
    """
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[_unescape(key)] = _unescape(_rstrip_unescaped(value))
    return props


def _logical_lines(text: str):
    pending: str | None = None
    # Java's line terminators only: str.splitlines would also split on \f, \v and others, which are data here.
    for raw in _LINE_BREAK.split(text):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
        else:
            line = pending + line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes: the last one escapes the line break
            pending = line[:-1]
            continue
        pending = None
        yield line
    if pending is not None:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _rstrip_unescaped(value: str) -> str:
    stripped = value.rstrip(" \t\f")
    # Whitespace right after an odd run of backslashes was escaped: keep that one character.
    run = len(stripped) - len(stripped.rstrip("\\"))
    return value[: len(stripped) + 1] if run % 2 == 1 and len(stripped) < len(value) else stripped


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt == "u" and _is_hex4(text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _is_hex4(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


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
