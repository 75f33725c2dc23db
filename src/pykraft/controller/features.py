"""Finalized features and UpdateFeatures (Kafka's FeatureControlManager).

The image is the set of FeatureLevelRecords replayed so far (level 0 removes a feature). metadata.version lives
here like any other feature. kraft.version does not: it is owned by the raft layer (KRaftVersionRecord in the
log), so an accepted kraft.version upgrade produces no FeatureLevelRecord but a `KRaftVersionUpgrade` marker that
tells the runtime to call `RaftCore.upgrade_kraft_version` (see ControllerResult). The runtime reports the
current kraft.version back through `kraft_version`.

UpdateFeatures rules, per update, in Kafka's order (the first failure answers the whole request, nothing is
written): a known upgrade type; level >= 0; the local controller, every registered controller and every
registered broker support the level; a lower level is refused (this controller supports no downgrades); an
upgrade must be asked for as an upgrade. Messages follow Kafka's "Invalid update version %d for feature %s. %s".
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kio.static.primitive import i16

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0

from .cluster import ClusterControl, FeatureRange
from .result import ControllerResult, KRaftVersionUpgrade

uf_v0 = schema_module("kio.schema.update_features.v0.response")
uf_v1 = schema_module("kio.schema.update_features.v1.response")
uf_v2 = schema_module("kio.schema.update_features.v2.response")

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"
FEATURE_LEVEL_RECORD = 12

# metadata.version feature levels: 7 is 3.3-IV3 (the oldest Kafka 4.x accepts), 27 is Kafka 4.1's latest.
MINIMUM_METADATA_VERSION = 7
LATEST_METADATA_VERSION = 27
# kraft.version 1 (KIP-853 voter changes) needs metadata.version 3.9-IV0 or newer (Kafka's feature dependency).
KRAFT_VERSION_1_MINIMUM_METADATA_VERSION = 21
DEFAULT_SUPPORTED_FEATURES: Mapping[str, FeatureRange] = {
    METADATA_VERSION: FeatureRange(MINIMUM_METADATA_VERSION, LATEST_METADATA_VERSION),
    KRAFT_VERSION: FeatureRange(0, 1),
    GROUP_VERSION: FeatureRange(0, 1),  # 1: the KIP-848 consumer group protocol
    TRANSACTION_VERSION: FeatureRange(0, 1),  # 1: flexible __transaction_state records (KIP-890 part 2 is level 2)
}


class UpgradeType(enum.IntEnum):
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdateError:
    code: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class FeatureUpdatePlan:
    """The outcome of validating an UpdateFeatures request: an error, or records (+ kraft.version marker)."""

    error: FeatureUpdateError | None
    records: tuple[Any, ...] = ()
    kraft_upgrade: KRaftVersionUpgrade | None = None


def invalid_update(feature: str, level: int, reason: str) -> FeatureUpdateError:
    return FeatureUpdateError(ErrorCode.INVALID_UPDATE_VERSION,
                              f"Invalid update version {level} for feature {feature}. {reason}")


class FeatureControl:
    def __init__(self, node_id: int, supported: Mapping[str, FeatureRange] = DEFAULT_SUPPORTED_FEATURES) -> None:
        self.node_id = node_id
        self.supported = dict(supported)
        self.finalized: dict[str, int] = {}
        self.kraft_version = 0  # reported by the runtime from the raft log; not part of the replayed image

    # ---- image -------------------------------------------------------------------------------------------------
    def replay(self, record: Any) -> None:
        level = int(record.feature_level)
        if level == 0:
            self.finalized.pop(record.name, None)
        else:
            self.finalized[record.name] = level

    def snapshot_records(self) -> Iterator[FeatureLevelRecordV0]:
        # metadata.version first: a reader of the snapshot needs it to interpret the records after it.
        for name in sorted(self.finalized, key=lambda n: (n != METADATA_VERSION, n)):
            yield FeatureLevelRecordV0(name=name, feature_level=i16(self.finalized[name]))

    @property
    def metadata_version(self) -> int | None:
        return self.finalized.get(METADATA_VERSION)

    def finalized_levels(self) -> dict[str, int]:
        """What a registering broker must support: the replayed features plus kraft.version when above 0."""
        levels = dict(self.finalized)
        if self.kraft_version > 0:
            levels[KRAFT_VERSION] = self.kraft_version
        return levels

    def current_level(self, feature: str) -> int:
        if feature == KRAFT_VERSION:
            return self.kraft_version
        return self.finalized.get(feature, 0)

    # ---- UpdateFeatures ----------------------------------------------------------------------------------------
    def plan_updates(self, updates: list[tuple[str, int, int]], validate_only: bool,
                     cluster: ClusterControl) -> FeatureUpdatePlan:
        """`updates` is (feature, level, upgrade type) per requested feature."""
        records: list[Any] = []
        kraft: KRaftVersionUpgrade | None = None
        # A dependency may be met by the same request (metadata.version raised alongside kraft.version).
        metadata_after = next((level for feature, level, _ in updates if feature == METADATA_VERSION),
                              self.current_level(METADATA_VERSION))
        for feature, level, upgrade_type in updates:
            error = self._check(feature, level, upgrade_type, cluster)
            if error is None and feature == KRAFT_VERSION and level >= 1 \
                    and metadata_after < KRAFT_VERSION_1_MINIMUM_METADATA_VERSION:
                error = invalid_update(feature, level, f"{KRAFT_VERSION} {level} requires {METADATA_VERSION} "
                                       f"{KRAFT_VERSION_1_MINIMUM_METADATA_VERSION} (3.9-IV0) or newer, but it "
                                       f"would be {metadata_after}.")
            if error is not None:
                return FeatureUpdatePlan(error)
            if level == self.current_level(feature):
                continue
            if feature == KRAFT_VERSION:
                kraft = KRaftVersionUpgrade(level, validate_only)
            else:
                records.append(FeatureLevelRecordV0(name=feature, feature_level=i16(level)))
        if validate_only:
            return FeatureUpdatePlan(None, (), kraft)
        return FeatureUpdatePlan(None, tuple(records), kraft)

    def _check(self, feature: str, level: int, upgrade_type: int,
               cluster: ClusterControl) -> FeatureUpdateError | None:
        if upgrade_type not in UpgradeType.__members__.values():
            return invalid_update(feature, level, "The controller does not support the given upgrade type.")
        if level < 0:
            return invalid_update(feature, level, "A feature version cannot be less than 0.")
        reason = self._not_supported_by_controllers(feature, level, cluster)
        if reason is None:
            reason = _not_supported_by_brokers(feature, level, cluster)
        if reason is not None:
            return invalid_update(feature, level, reason)
        current = self.current_level(feature)
        if level < current:
            if upgrade_type == UpgradeType.UPGRADE:
                return invalid_update(feature, level, "Can't downgrade the version of this feature without "
                                                      "setting the upgrade type to either safe or unsafe downgrade.")
            return invalid_update(feature, level, f"This controller does not support downgrading {feature} "
                                                  f"from {current}.")
        if level > current and upgrade_type != UpgradeType.UPGRADE:
            return invalid_update(feature, level, "Can't downgrade to a newer version.")
        return None

    def _not_supported_by_controllers(self, feature: str, level: int, cluster: ClusterControl) -> str | None:
        reason = _range_reason(f"Local controller {self.node_id}", self.supported.get(feature), level)
        if reason is not None:
            return reason
        for controller_id in sorted(cluster.controllers):
            if controller_id == self.node_id:
                continue
            reason = _range_reason(f"Controller {controller_id}",
                                   cluster.controllers[controller_id].supported(feature), level)
            if reason is not None:
                return reason
        return None


def _range_reason(who: str, supported: FeatureRange | None, level: int) -> str | None:
    # A node that does not list a feature supports only level 0 of it (v0-v3 registrations omit min-0 features).
    if supported is None:
        return None if level == 0 else f"{who} does not support this feature."
    if supported.contains(level):
        return None
    return f"{who} only supports versions {supported.min_version}-{supported.max_version}."


def _not_supported_by_brokers(feature: str, level: int, cluster: ClusterControl) -> str | None:
    for broker_id in sorted(cluster.brokers):
        supported = cluster.brokers[broker_id].supported(feature)
        if supported is None:
            if level > 0:
                return f"Broker {broker_id} does not support this feature."
        elif not supported.contains(level):
            return (f"Broker {broker_id} does not support the given version. "
                    f"It supports {supported.min_version} to {supported.max_version}.")
    return None


_RESPONSES = {0: uf_v0, 1: uf_v1, 2: uf_v2}  # version -> response module


def handle_update_features(features: FeatureControl, request: Any, cluster: ClusterControl) -> ControllerResult:
    """UpdateFeatures v0-v2. v0 carries AllowDowngrade instead of an upgrade type (true = safe downgrade)."""
    version = int(request.__version__)
    updates: list[tuple[str, int, int]] = []
    for update in request.feature_updates:
        upgrade_type: int
        if version == 0:
            upgrade_type = UpgradeType.SAFE_DOWNGRADE if update.allow_downgrade else UpgradeType.UPGRADE
        else:
            upgrade_type = int(update.upgrade_type)
        updates.append((update.feature, int(update.max_version_level), int(upgrade_type)))
    names = [name for name, _, _ in updates]
    if len(set(names)) != len(names):
        error: FeatureUpdateError | None = FeatureUpdateError(ErrorCode.INVALID_REQUEST,
                                                              "The request contains a feature more than once.")
        return ControllerResult((), update_features_response(version, names, error))
    plan = features.plan_updates(updates, bool(getattr(request, "validate_only", False)), cluster)
    return ControllerResult(plan.records, update_features_response(version, names, plan.error), plan.kraft_upgrade)


def update_features_response(version: int, features: list[str], error: FeatureUpdateError | None) -> Any:
    """The top-level error answers for the whole (atomic) request; v0-v1 also list each feature with it."""
    code = ErrorCode.NONE if error is None else error.code
    message = None if error is None else error.message
    module = _RESPONSES[version]
    if version >= 2:
        return module.UpdateFeaturesResponse(throttle_time=ZERO_THROTTLE, error_code=code, error_message=message)
    results = tuple(module.UpdatableFeatureResult(feature=name, error_code=code, error_message=message)
                    for name in features)
    return module.UpdateFeaturesResponse(throttle_time=ZERO_THROTTLE, error_code=code, error_message=message,
                                         results=results)
