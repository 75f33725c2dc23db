"""The pure half of `storage format`: metadata.version names, --feature levels, --initial-controllers, and the
kraft.version rules (reference §6.2). Every refusal is a `FormatError` with a one-line message.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records.uuids import kafka_str_to_uuid

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
GROUP_V1_BOOTSTRAP_METADATA_VERSION = 22  # group.version 1 (KIP-848) is a 4.0-IV0 cluster's default
TRANSACTION_VERSION = "transaction.version"
# transaction.version: Kafka finalizes 2 (KIP-890 part 2) from 4.0-IV2 on; pykraft serves levels 0-1 (the coordinator
# of transaction.version 1 clients: EndTxn up to v4), so it finalizes 1 from that release on.
TXN_VERSION_BOOTSTRAP_METADATA_VERSION = 24
MAX_TRANSACTION_VERSION = 1

# Kafka's MetadataVersion feature levels, from the oldest Kafka 4.x accepts (3.3-IV3) to Kafka 4.1's latest.
METADATA_VERSIONS: Mapping[str, int] = {
    "3.3-IV3": 7, "3.4-IV0": 8, "3.5-IV0": 9, "3.5-IV1": 10, "3.5-IV2": 11, "3.6-IV0": 12, "3.6-IV1": 13,
    "3.6-IV2": 14, "3.7-IV0": 15, "3.7-IV1": 16, "3.7-IV2": 17, "3.7-IV3": 18, "3.7-IV4": 19, "3.8-IV0": 20,
    "3.9-IV0": 21, "4.0-IV0": 22, "4.0-IV1": 23, "4.0-IV2": 24, "4.0-IV3": 25, "4.1-IV0": 26, "4.1-IV1": 27,
}
LATEST_METADATA_VERSION = 27
MINIMUM_METADATA_VERSION = 7
KRAFT_V1_MINIMUM_METADATA_VERSION = 21  # kraft.version 1 needs metadata.version 3.9-IV0 or later
_NAMES_BY_LEVEL = {level: name for name, level in METADATA_VERSIONS.items()}
_RELEASE_RE = re.compile(r"^(\d+\.\d+)(-IV\d+)?$")


class FormatError(Exception):
    """`storage format`/`info` refuses: the message is one line, ready for `pykraft storage: <message>`."""


class QuorumFlag(enum.Enum):
    """Which of the three mutually exclusive reconfigurable-quorum flags was given."""

    NONE = "none"
    STANDALONE = "--standalone"
    INITIAL_CONTROLLERS = "--initial-controllers"
    NO_INITIAL_CONTROLLERS = "--no-initial-controllers"

    @property
    def dynamic(self) -> bool:
        return self is not QuorumFlag.NONE


def metadata_version_name(level: int) -> str:
    return _NAMES_BY_LEVEL.get(level, str(level))


def parse_release_version(text: str) -> int:
    """"4.1-IV1" -> 27; a bare release ("3.9", "4.0") means its latest IV, as Kafka's MetadataVersion does."""
    text = text.strip()
    if text in METADATA_VERSIONS:
        return METADATA_VERSIONS[text]
    match = _RELEASE_RE.match(text)
    if match is not None and match.group(2) is None:
        levels = [level for name, level in METADATA_VERSIONS.items() if name.startswith(match.group(1) + "-")]
        if levels:
            return max(levels)
    raise FormatError(
        f"unknown release version {text!r}: supported metadata.version values are "
        f"{metadata_version_name(MINIMUM_METADATA_VERSION)} to {metadata_version_name(LATEST_METADATA_VERSION)}"
    )


def parse_features(items: Sequence[str]) -> dict[str, int]:
    """`--feature name=level` flags: metadata.version, kraft.version, transaction.version and group.version."""
    levels: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise FormatError(f"cannot parse --feature {item!r}: expected name=level")
        if name in levels:
            raise FormatError(f"--feature {name} was given more than once")
        if name not in (METADATA_VERSION, KRAFT_VERSION, TRANSACTION_VERSION, GROUP_VERSION):
            supported = f"{GROUP_VERSION}, {KRAFT_VERSION}, {METADATA_VERSION}, {TRANSACTION_VERSION}"
            raise FormatError(f"unsupported feature: {name}. Supported features are: {supported}")
        try:
            levels[name] = int(value.strip())
        except ValueError:
            raise FormatError(f"cannot parse --feature {item!r}: the level must be an integer") from None
    return levels


def effective_metadata_version(release_version: str | None, features: Mapping[str, int]) -> int:
    if release_version is not None and METADATA_VERSION in features:
        raise FormatError("give the metadata.version with either --release-version or --feature, not both")
    if release_version is not None:
        return parse_release_version(release_version)
    level = features.get(METADATA_VERSION, LATEST_METADATA_VERSION)
    if not MINIMUM_METADATA_VERSION <= level <= LATEST_METADATA_VERSION:
        raise FormatError(
            f"unsupported metadata.version level {level}: supported levels are {MINIMUM_METADATA_VERSION} "
            f"({metadata_version_name(MINIMUM_METADATA_VERSION)}) to {LATEST_METADATA_VERSION} "
            f"({metadata_version_name(LATEST_METADATA_VERSION)})"
        )
    return level


def effective_kraft_version(flag: QuorumFlag, features: Mapping[str, int], metadata_version: int) -> int:
    """The three quorum flags imply kraft.version 1; an explicit level must agree with them (Kafka's rules)."""
    explicit = features.get(KRAFT_VERSION)
    if explicit is not None and explicit not in (0, 1):
        raise FormatError(f"unsupported kraft.version level {explicit}: supported levels are 0 and 1")
    if flag.dynamic and explicit == 0:
        raise FormatError(
            "Cannot set kraft.version to 0 if one of the flags --standalone, --initial-controllers, or "
            "--no-initial-controllers is used. For dynamic controllers support, try removing the --feature flag "
            "for kraft.version."
        )
    if not flag.dynamic and explicit == 1:
        raise FormatError(
            "Cannot set kraft.version to 1 unless one of the flags --standalone, --initial-controllers, or "
            "--no-initial-controllers is used. For dynamic controllers support, try using one of those flags."
        )
    version = 1 if flag.dynamic else 0
    if version == 1 and metadata_version < KRAFT_V1_MINIMUM_METADATA_VERSION:
        raise FormatError(
            f"kraft.version 1 (dynamic controller quorum) requires metadata.version "
            f"{metadata_version_name(KRAFT_V1_MINIMUM_METADATA_VERSION)} or later, not "
            f"{metadata_version_name(metadata_version)}"
        )
    return version


def effective_group_version(features: Mapping[str, int], metadata_version: int) -> int:
    """group.version: 1 (the KIP-848 consumer protocol) by default from 4.0-IV0 on, as Kafka's GroupVersion; it
    has no dependency, so an explicit level is taken at any metadata.version."""
    explicit = features.get(GROUP_VERSION)
    if explicit is not None and explicit not in (0, 1):
        raise FormatError(f"unsupported group.version level {explicit}: supported levels are 0 and 1")
    if explicit is not None:
        return explicit
    return 1 if metadata_version >= GROUP_V1_BOOTSTRAP_METADATA_VERSION else 0


def effective_transaction_version(features: Mapping[str, int], metadata_version: int) -> int:
    """transaction.version: an explicit level (no dependency), else the release's default (see above)."""
    explicit = features.get(TRANSACTION_VERSION)
    if explicit is not None and not 0 <= explicit <= MAX_TRANSACTION_VERSION:
        raise FormatError(f"unsupported transaction.version level {explicit}: supported levels are 0 to "
                          f"{MAX_TRANSACTION_VERSION}")
    if explicit is not None:
        return explicit
    return MAX_TRANSACTION_VERSION if metadata_version >= TXN_VERSION_BOOTSTRAP_METADATA_VERSION else 0


@dataclass(frozen=True, slots=True)
class InitialController:
    """One `id@host:port:directoryId` entry of --initial-controllers (Kafka's DynamicVoter)."""

    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID


def parse_initial_controller(text: str) -> InitialController:
    text = text.strip()
    node_text, at, rest = text.partition("@")
    if not at:
        raise FormatError(f"cannot parse initial controller {text!r}: no @ found (expected id@host:port:directoryId)")
    try:
        node_id = int(node_text)
    except ValueError:
        raise FormatError(f"cannot parse initial controller {text!r}: {node_text!r} is not a node id") from None
    if node_id < 0:
        raise FormatError(f"cannot parse initial controller {text!r}: negative node id {node_id}")
    if rest.startswith("["):
        host, bracket, rest = rest[1:].partition("]")
        if not bracket:
            raise FormatError(f"cannot parse initial controller {text!r}: '[' without a closing ']'")
    else:
        host, colon, rest = rest.partition(":")
        rest = ":" + rest if colon else ""
    if not host or not rest.startswith(":"):
        raise FormatError(f"cannot parse initial controller {text!r}: expected id@host:port:directoryId")
    port_text, colon, dir_text = rest[1:].partition(":")
    if not colon:
        raise FormatError(f"cannot parse initial controller {text!r}: no directory id after the port")
    try:
        port = int(port_text)
    except ValueError:
        raise FormatError(f"cannot parse initial controller {text!r}: {port_text!r} is not a port") from None
    if not 0 <= port <= 65535:
        raise FormatError(f"cannot parse initial controller {text!r}: port {port} is out of range")
    try:
        directory_id = kafka_str_to_uuid(dir_text)
    except ValueError:
        raise FormatError(f"cannot parse initial controller {text!r}: {dir_text!r} is not a directory id") from None
    return InitialController(node_id, host, port, directory_id)


def parse_initial_controllers(text: str) -> tuple[InitialController, ...]:
    """The comma-separated --initial-controllers value: ids and directory ids each unique."""
    entries = [parse_initial_controller(item) for item in text.split(",") if item.strip()]
    if not entries:
        raise FormatError("--initial-controllers: no voters given")
    ids: set[int] = set()
    dirs: set[uuid.UUID] = set()
    for entry in entries:
        if entry.node_id in ids:
            raise FormatError(f"--initial-controllers: node id {entry.node_id} was specified more than once")
        if entry.directory_id in dirs:
            raise FormatError(
                f"--initial-controllers: directory id of node {entry.node_id} was specified more than once"
            )
        ids.add(entry.node_id)
        dirs.add(entry.directory_id)
    return tuple(entries)


def initial_voter_set(controllers: Sequence[InitialController], listener_name: str) -> VoterSet:
    """The VotersRecord content: each voter with one endpoint on the controller listener, kraft.version 0-1."""
    return VoterSet.of(
        VoterNode(
            ReplicaKey(c.node_id, c.directory_id),
            Endpoints.of([Endpoint(listener_name, c.host, c.port)]),
            SupportedVersionRange(0, 1),
        )
        for c in controllers
    )
