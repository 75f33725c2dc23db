"""Text output of `metadata-quorum` and `features`, byte for byte as Kafka's tools print it (reference §6.1, §6.3).

Pure functions from the admin model to strings, so they are tested against hand-built values. Where Kafka's tool
would throw (the leader missing from the voter list, a timestamp ahead of this machine's clock with
--human-readable), these print something honest instead, as noted at each place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pykraft.admin.model import FeatureMetadata, QuorumInfo, ReplicaState
from pykraft.raft.voter_set import Endpoint, ReplicaKey
from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.format_options import METADATA_VERSIONS

__all__ = [
    "REPLICATION_HEADERS",
    "added_controller_line",
    "endpoint_text",
    "feature_lines",
    "feature_update_line",
    "level_text",
    "reassign_event_line",
    "removed_controller_line",
    "replication_table",
    "status_text",
]

LABEL_WIDTH = 24
REPLICATION_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                       "LastCaughtUpTimestamp", "Status")

# metadata.version release names by feature level: the table `storage format` uses (Kafka 4.x's MetadataVersion,
# 3.3-IV3 = 7 onwards; Kafka 4.x no longer knows older levels and prints them as "UNKNOWN n" too).
METADATA_VERSION_LEVELS = dict(METADATA_VERSIONS)
_NAMES_BY_LEVEL = {level: name for name, level in METADATA_VERSIONS.items()}


def _label(name: str) -> str:
    return f"{name + ':':<{LABEL_WIDTH}}"


def endpoint_text(endpoint: Endpoint) -> str:
    """Kafka's RaftVoterEndpoint.toString(): IPv6 hosts in brackets."""
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return f"{endpoint.name}://{host}:{endpoint.port}"


def _replica_entry(replica: ReplicaState, endpoints: Sequence[Endpoint]) -> str:
    directory = "null" if replica.directory_id is None else f'"{uuid_to_kafka_str(replica.directory_id)}"'
    text = f'{{"id": {replica.replica_id}, "directoryId": {directory}'
    if endpoints:  # omitted when unknown, the usual case for observers
        text += ', "endpoints": [' + ", ".join(f'"{endpoint_text(e)}"' for e in endpoints) + "]"
    return text + "}"


def _replica_list(info: QuorumInfo, replicas: Iterable[ReplicaState]) -> str:
    return "[" + ", ".join(_replica_entry(r, info.endpoints_of(r.replica_id)) for r in replicas) + "]"


def _leader_state(info: QuorumInfo) -> ReplicaState | None:
    return next((v for v in info.voters if v.replica_id == info.leader_id), None)


def max_follower_lag(info: QuorumInfo) -> tuple[int, int]:
    """(MaxFollowerLag, MaxFollowerLagTimeMs) by Kafka's rules.

    The laggiest voter is the first voter (in the leader's order) with the smallest log end offset. The time lag
    is 0 when that voter is the leader itself, -1 when either caught-up time is unknown, else the difference of the
    two caught-up times. Kafka's tool fails when the leader is not in the voter list (a leader that removed itself
    and has not resigned yet); we print -1 for both values then.
    """
    leader = _leader_state(info)
    if leader is None or not info.voters:
        return -1, -1
    laggiest = min(info.voters, key=lambda v: v.log_end_offset)  # min() keeps the first of equal values
    lag = leader.log_end_offset - laggiest.log_end_offset
    if laggiest is leader:
        return lag, 0
    if leader.last_caught_up_timestamp is None or laggiest.last_caught_up_timestamp is None:
        return lag, -1
    return lag, leader.last_caught_up_timestamp - laggiest.last_caught_up_timestamp


def status_text(cluster_id: str, info: QuorumInfo) -> str:
    lag, lag_ms = max_follower_lag(info)
    rows = (
        ("ClusterId", cluster_id),
        ("LeaderId", info.leader_id),
        ("LeaderEpoch", info.leader_epoch),
        ("HighWatermark", info.high_watermark),
        ("MaxFollowerLag", lag),
        ("MaxFollowerLagTimeMs", lag_ms),
        ("CurrentVoters", _replica_list(info, info.voters)),
        ("CurrentObservers", _replica_list(info, info.observers)),
    )
    return "\n".join(f"{_label(name)}{value}" for name, value in rows)


def _timestamp_cell(value: int | None, human_readable: bool, now_ms: int) -> str:
    if value is None:
        return "-1"
    if not human_readable:
        return str(value)
    # Kafka's tool throws on a timestamp after its own clock ("possible drift in system clock"); the leader's clock
    # is often a few ms ahead of ours, so we print 0 ms ago instead of failing.
    return f"{max(now_ms - value, 0)} ms ago"


def replication_rows(info: QuorumInfo, human_readable: bool, now_ms: int) -> list[list[str]]:
    """Leader first, then the other voters, then observers, each in the leader's order."""
    leader = _leader_state(info) or next((o for o in info.observers if o.replica_id == info.leader_id), None)
    leader_leo = leader.log_end_offset if leader is not None else None

    def row(replica: ReplicaState, status: str) -> list[str]:
        lag = "-1" if leader_leo is None else str(leader_leo - replica.log_end_offset)
        return [str(replica.replica_id), uuid_to_kafka_str(replica.directory_id), str(replica.log_end_offset), lag,
                _timestamp_cell(replica.last_fetch_timestamp, human_readable, now_ms),
                _timestamp_cell(replica.last_caught_up_timestamp, human_readable, now_ms), status]

    rows = [row(leader, "Leader")] if leader is not None else []
    rows += [row(v, "Follower") for v in info.voters if v is not leader]
    rows += [row(o, "Observer") for o in info.observers if o is not leader]
    return rows


def replication_table(info: QuorumInfo, *, human_readable: bool = False, now_ms: int = 0) -> str:
    """Kafka's ToolsUtils.prettyPrintTable: every cell left-aligned to its column's width, then a TAB."""
    rows = [list(REPLICATION_HEADERS), *replication_rows(info, human_readable, now_ms)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(REPLICATION_HEADERS))]
    return "\n".join("".join(f"{cell:<{width}}\t" for cell, width in zip(r, widths)) for r in rows)


def added_controller_line(key: ReplicaKey, endpoints: Sequence[Endpoint], dry_run: bool) -> str:
    verb = "DRY RUN of adding" if dry_run else "Added"
    return (f"{verb} controller {key.id} with directory id {uuid_to_kafka_str(key.directory_id)} and endpoints: "
            + ", ".join(endpoint_text(e) for e in endpoints))


def removed_controller_line(key: ReplicaKey, dry_run: bool) -> str:
    verb = "DRY RUN of removing" if dry_run else "Removed"
    return f"{verb} KRaft controller {key.id} with directory id {uuid_to_kafka_str(key.directory_id)}"


def level_text(feature: str, level: int) -> str:
    """metadata.version levels print as release names ("4.1-IV1"), other features as numbers."""
    if feature == "metadata.version":
        return _NAMES_BY_LEVEL.get(level, f"UNKNOWN {level}")
    return str(level)


def feature_lines(features: FeatureMetadata) -> list[str]:
    """One line per supported feature, sorted by name; the finalized level is 0 when not finalized."""
    epoch = "-" if features.finalized_epoch is None else str(features.finalized_epoch)
    lines = []
    for name in sorted(features.supported):
        supported = features.supported[name]
        finalized = features.finalized.get(name)
        level = finalized.max_version_level if finalized is not None else 0
        lines.append(f"Feature: {name}\tSupportedMinVersion: {level_text(name, supported.min_version)}\t"
                     f"SupportedMaxVersion: {level_text(name, supported.max_version)}\t"
                     f"FinalizedVersionLevel: {level_text(name, level)}\tEpoch: {epoch}")
    return lines


def feature_update_line(op: str, feature: str, level: int, error: str | None, dry_run: bool) -> str:
    """Kafka's FeatureCommand result lines ("kraft.version was upgraded to 1.")."""
    if error is not None:
        target = f"disable {feature}" if op == "disable" else f"{op} {feature} to {level}"
        return f"{'Can not' if dry_run else 'Could not'} {target}. {error}"
    done = "disabled." if op == "disable" else f"{op}d to {level}."
    return f"{feature}{' can be ' if dry_run else ' was '}{done}"


def parse_levels(values: Sequence[str]) -> Mapping[str, int]:
    """`--feature name=level` values; raises ValueError with Kafka's wording on a bad one."""
    levels: dict[str, int] = {}
    for text in values:
        name, sep, level = text.partition("=")
        if not sep:
            raise ValueError(f"Can't parse feature=level string {text}: equals sign not found.")
        name, level = name.strip(), level.strip()
        try:
            value = int(level)
            if not -0x8000 <= value <= 0x7FFF:
                raise ValueError
        except ValueError:
            raise ValueError(f"Can't parse feature=level string {text}: unable to parse {level} as a short.") from None
        if name in levels:
            raise ValueError(f"Feature {name} was specified more than once.")
        levels[name] = value
    return levels




def reassign_event_line(event: object) -> str:
    """One progress line of `metadata-quorum reassign`."""
    from pykraft.admin.reassign import ReassignAccepted, ReassignDone, ReassignProgress

    if isinstance(event, ReassignDone):
        return f"Reassignment complete. Voters: {list(event.voters)}"
    if isinstance(event, ReassignAccepted):
        if event.target is None:
            return "Cancelling the quorum reassignment in progress (the voters stay as they are now)"
        return f"Reassigning the quorum to voters {sorted(event.target)} (the leader moves it one voter at a time)"
    assert isinstance(event, ReassignProgress), event
    return f"Voters {list(event.voters)}; adding {list(event.adding)}; removing {list(event.removing)}"