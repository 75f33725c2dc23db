"""Finalized features and UpdateFeatures (reference §6.3, §8.1; KAFKA-16538 for kraft.version)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.update_features.v0 import request as uf_v0
from kio.schema.update_features.v1 import request as uf_v1
from kio.schema.update_features.v2 import request as uf_v2
from kio.static.primitive import i8, i16, i32

from pykraft.controller.cluster import ClusterControl
from pykraft.controller.features import FeatureControl, FeatureRange, handle_update_features
from pykraft.controller.result import KRaftVersionUpgrade
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.register_controller_record import ControllerFeatureV0, RegisterControllerRecordV0

from .broker_fakes import Harness


def _level(name: str, level: int) -> FeatureLevelRecordV0:
    return FeatureLevelRecordV0(name=name, feature_level=i16(level))


def _request(*updates: tuple[str, int, int], validate_only: bool = False, version: int = 1) -> object:
    module = {1: uf_v1, 2: uf_v2}[version]
    keys = tuple(module.FeatureUpdateKey(feature=f, max_version_level=i16(level), upgrade_type=i8(kind))
                 for f, level, kind in updates)
    return module.UpdateFeaturesRequest(feature_updates=keys, validate_only=validate_only)


def _features(mv: int = 20) -> tuple[FeatureControl, ClusterControl]:
    features = FeatureControl(node_id=3000)
    features.replay(_level("metadata.version", mv))
    return features, ClusterControl()


def test_feature_level_zero_removes_the_feature() -> None:
    features, _ = _features()
    features.replay(_level("group.version", 1))
    features.replay(_level("group.version", 0))
    assert features.finalized == {"metadata.version": 20}


def test_snapshot_lists_metadata_version_first() -> None:
    features, _ = _features()
    features.replay(_level("a.version", 1))
    assert [r.name for r in features.snapshot_records()] == ["metadata.version", "a.version"]


def test_metadata_version_upgrade_writes_a_feature_level_record() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 27, 1)), cluster)
    assert result.response.error_code == ErrorCode.none and result.response.error_message is None
    assert result.records == (_level("metadata.version", 27),) and result.kraft_version_upgrade is None
    assert [(r.feature, r.error_code) for r in result.response.results] == [("metadata.version", ErrorCode.none)]


def test_upgrade_to_the_current_level_writes_nothing() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 20, 1)), cluster)
    assert result.response.error_code == ErrorCode.none and result.records == ()


def test_validate_only_writes_nothing() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 27, 1), validate_only=True), cluster)
    assert result.response.error_code == ErrorCode.none and result.records == ()


def test_downgrade_asked_as_an_upgrade_is_invalid_update_version() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 19, 1)), cluster)
    assert result.records == () and result.response.error_code == ErrorCode.invalid_update_version
    assert result.response.error_message == (
        "Invalid update version 19 for feature metadata.version. Can't downgrade the version of this feature "
        "without setting the upgrade type to either safe or unsafe downgrade.")


def test_safe_and_unsafe_downgrades_are_refused() -> None:
    features, cluster = _features(20)
    for kind in (2, 3):
        result = handle_update_features(features, _request(("metadata.version", 19, kind)), cluster)
        assert result.records == () and result.response.error_code == ErrorCode.invalid_update_version


def test_upgrade_asked_as_a_downgrade_is_invalid_update_version() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 21, 2)), cluster)
    assert result.response.error_message.endswith("Can't downgrade to a newer version.")


def test_unknown_upgrade_type_and_negative_level_are_invalid_update_version() -> None:
    features, cluster = _features(20)
    unknown = handle_update_features(features, _request(("metadata.version", 21, 7)), cluster).response
    negative = handle_update_features(features, _request(("group.version", -1, 1)), cluster).response
    assert unknown.error_message.endswith("The controller does not support the given upgrade type.")
    assert negative.error_message.endswith("A feature version cannot be less than 0.")


def test_every_registered_broker_must_support_the_level() -> None:
    h = Harness(mv=20)
    h.register(1, mv_range=(7, 27))
    h.register(2, mv_range=(7, 25))
    result = handle_update_features(h.features, _request(("metadata.version", 26, 1)), h.cluster)
    assert result.records == () and result.response.error_code == ErrorCode.invalid_update_version
    assert result.response.error_message == ("Invalid update version 26 for feature metadata.version. "
                                             "Broker 2 does not support the given version. It supports 7 to 25.")
    ok = handle_update_features(h.features, _request(("metadata.version", 25, 1)), h.cluster)
    assert ok.records == (_level("metadata.version", 25),)


def test_broker_without_the_feature_blocks_any_level_above_zero() -> None:
    h = Harness(mv=20)
    h.register(1)
    response = handle_update_features(h.features, _request(("kraft.version", 1, 1)), h.cluster).response
    assert response.error_message.endswith("Broker 1 does not support this feature.")


def test_every_registered_controller_and_the_local_one_must_support_the_level() -> None:
    features, cluster = _features(20)
    cluster.replay(RegisterControllerRecordV0(
        controller_id=i32(3001), incarnation_id=None, zk_migration_ready=False, end_points=(),
        features=(ControllerFeatureV0(name="metadata.version", min_supported_version=i16(7),
                                      max_supported_version=i16(24)),)), 0)
    response = handle_update_features(features, _request(("metadata.version", 25, 1)), cluster).response
    assert response.error_message.endswith("Controller 3001 only supports versions 7-24.")
    local = FeatureControl(3000, {"metadata.version": FeatureRange(7, 22)})
    local.replay(_level("metadata.version", 20))
    response = handle_update_features(local, _request(("metadata.version", 23, 1)), ClusterControl()).response
    assert response.error_message.endswith("Local controller 3000 only supports versions 7-22.")
    unknown = handle_update_features(local, _request(("group.version", 1, 1)), ClusterControl()).response
    assert unknown.error_message.endswith("Local controller 3000 does not support this feature.")


def test_kraft_version_upgrade_is_handed_to_the_raft_layer_not_written() -> None:
    h = Harness(mv=21)
    h.register(1, extra_features=(("kraft.version", 0, 1),))
    result = handle_update_features(h.features, _request(("kraft.version", 1, 1)), h.cluster)
    assert result.response.error_code == ErrorCode.none and result.records == ()
    assert result.kraft_version_upgrade == KRaftVersionUpgrade(1, validate_only=False)
    dry = handle_update_features(h.features, _request(("kraft.version", 1, 1), validate_only=True), h.cluster)
    assert dry.kraft_version_upgrade == KRaftVersionUpgrade(1, validate_only=True)


def test_kraft_version_downgrade_is_refused() -> None:
    features, cluster = _features(21)
    features.kraft_version = 1
    result = handle_update_features(features, _request(("kraft.version", 0, 3)), cluster)
    assert result.kraft_version_upgrade is None and result.response.error_code == ErrorCode.invalid_update_version


def test_one_failing_update_fails_the_whole_request() -> None:
    features, cluster = _features(20)
    result = handle_update_features(features, _request(("metadata.version", 27, 1), ("metadata.version", 1, 1)),
                                    cluster)
    assert result.response.error_code == ErrorCode.invalid_request and result.records == ()
    result = handle_update_features(features, _request(("metadata.version", 27, 1), ("share.version", 1, 1)),
                                    cluster)
    assert result.response.error_code == ErrorCode.invalid_update_version and result.records == ()
    assert {r.error_code for r in result.response.results} == {ErrorCode.invalid_update_version}


def test_version_0_allow_downgrade_means_a_safe_downgrade() -> None:
    features, cluster = _features(20)
    request = uf_v0.UpdateFeaturesRequest(feature_updates=(
        uf_v0.FeatureUpdateKey(feature="metadata.version", max_version_level=i16(21), allow_downgrade=True),))
    response = handle_update_features(features, request, cluster).response
    assert response.__version__ == 0 and response.error_message.endswith("Can't downgrade to a newer version.")


def test_version_2_response_has_only_the_top_level_error() -> None:
    features, cluster = _features(20)
    response = handle_update_features(features, _request(("metadata.version", 21, 1), version=2), cluster).response
    assert response.__version__ == 2 and response.error_code == ErrorCode.none
    assert not hasattr(response, "results")


def test_kraft_version_1_needs_metadata_version_3_9_or_an_upgrade_to_it_in_the_same_request() -> None:
    features, cluster = _features(20)
    refused = handle_update_features(features, _request(("kraft.version", 1, 1)), cluster)
    assert refused.kraft_version_upgrade is None and refused.records == ()
    assert refused.response.error_code == ErrorCode.invalid_update_version
    assert "requires metadata.version 21 (3.9-IV0) or newer, but it would be 20" in refused.response.error_message
    together = handle_update_features(features, _request(("metadata.version", 21, 1), ("kraft.version", 1, 1)),
                                      cluster)
    assert together.response.error_code == ErrorCode.none
    assert together.records == (_level("metadata.version", 21),)
    assert together.kraft_version_upgrade == KRaftVersionUpgrade(1, validate_only=False)


def test_group_version_1_the_kip848_protocol_can_be_finalized_and_turned_off() -> None:
    features, cluster = _features(22)
    result = handle_update_features(features, _request(("group.version", 1, 1)), cluster)
    assert result.response.error_code == ErrorCode.none and result.records == (_level("group.version", 1),)
    features.replay(result.records[0])
    too_high = handle_update_features(features, _request(("group.version", 2, 1)), cluster)
    assert too_high.response.error_code == ErrorCode.invalid_update_version and too_high.records == ()
    off = handle_update_features(features, _request(("group.version", 0, 2)), cluster)  # a safe downgrade: refused
    assert off.records == ()  # finalized levels are not downgraded (pykraft refuses downgrades of a set level)
