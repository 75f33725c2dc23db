"""`version-mapping` and `feature-dependencies` of Kafka's kafka-features.sh and kafka-storage.sh: which feature
levels a release finalizes, and which features a feature level needs. Pure: strings in, lines out; a bad value
raises `FeatureVersionError` with the line to print.

pykraft finalizes metadata.version, kraft.version, transaction.version and group.version, so these are the lines it
prints (Kafka prints its other production features too: eligible.leader.replicas.version, ...). kraft.version 1
(KIP-853) is the default from metadata.version 3.9-IV0 on and depends on it, as in Kafka's KRaftVersion.
transaction.version has no dependency; its default from 4.0-IV2 on is pykraft's highest level, 1 (Kafka's is 2,
KIP-890 part 2, not served here). group.version 1 (KIP-848) is the default from 4.0-IV0 on and has no dependency.
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.controller.features import (
    KRAFT_VERSION,
    KRAFT_VERSION_1_MINIMUM_METADATA_VERSION,
    LATEST_METADATA_VERSION,
    METADATA_VERSION,
)
from pykraft.storage.format_options import (
    GROUP_V1_BOOTSTRAP_METADATA_VERSION,
    GROUP_VERSION,
    MAX_TRANSACTION_VERSION,
    TRANSACTION_VERSION,
    FormatError,
    effective_transaction_version,
    metadata_version_name,
    parse_release_version,
)

MAX_KRAFT_VERSION = 1


class FeatureVersionError(ValueError):
    """A release or feature the tool cannot map; `str()` is the line to print."""


def _release_level(release_version: str | None) -> int:
    if release_version is None:
        return LATEST_METADATA_VERSION  # Kafka's default: the latest production metadata.version
    try:
        return parse_release_version(release_version)
    except FormatError:
        raise FeatureVersionError(f"Unknown release version '{release_version}'. Supported versions are: "
                                  f"{metadata_version_name(7)} to {metadata_version_name(LATEST_METADATA_VERSION)}")


def version_mapping_lines(release_version: str | None) -> list[str]:
    """`metadata.version=27 (4.1-IV1)` then each other feature's default level for that release."""
    level = _release_level(release_version)
    kraft = 1 if level >= KRAFT_VERSION_1_MINIMUM_METADATA_VERSION else 0
    group = 1 if level >= GROUP_V1_BOOTSTRAP_METADATA_VERSION else 0
    return [f"{METADATA_VERSION}={level} ({metadata_version_name(level)})", f"{KRAFT_VERSION}={kraft}",
            f"{TRANSACTION_VERSION}={effective_transaction_version({}, level)}", f"{GROUP_VERSION}={group}"]


def feature_dependencies_lines(specs: Sequence[str]) -> list[str]:
    """For each `feature=level`: `F=L requires:` and its dependencies indented, or `F=L has no dependencies.`"""
    if not specs:
        raise FeatureVersionError("You must specify at least one feature with --feature")
    lines = []
    for spec in specs:
        name, sep, text = spec.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not text.lstrip("-").isdigit():
            raise FeatureVersionError(f"Can't parse feature=level string {spec}")
        level = int(text)
        if name == METADATA_VERSION:
            if metadata_version_name(level) == str(level):
                raise FeatureVersionError(f"Unknown metadata.version {level}")
            lines.append(f"{name}={level} has no dependencies.")
        elif name == KRAFT_VERSION:
            if not 0 <= level <= MAX_KRAFT_VERSION:
                raise FeatureVersionError(f"No feature:{name} with feature level {level}")
            if level == 0:
                lines.append(f"{name}={level} has no dependencies.")
            else:
                needed = KRAFT_VERSION_1_MINIMUM_METADATA_VERSION
                lines += [f"{name}={level} requires:",
                          f"    {METADATA_VERSION}={needed} ({metadata_version_name(needed)})"]
        elif name in (TRANSACTION_VERSION, GROUP_VERSION):
            if not 0 <= level <= (MAX_TRANSACTION_VERSION if name == TRANSACTION_VERSION else 1):
                raise FeatureVersionError(f"No feature:{name} with feature level {level}")
            lines.append(f"{name}={level} has no dependencies.")
        else:
            raise FeatureVersionError(f"Unknown feature: {name}")
    return lines
