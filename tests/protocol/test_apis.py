"""The API registry: the default ranges, deriving variants, and rejecting ranges kio cannot decode."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from pykraft.protocol.apis import (
    KRAFT_NODE_APIS,
    NODE_RUNTIME_APIS,
    ApiKey,
    ApiRegistry,
    VersionRange,
    kio_knows,
    kio_lists,
    request_class,
    response_class,
)

EXPECTED_DEFAULT = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.FETCH: (13, 18),
    ApiKey.METADATA: (0, 12),
    ApiKey.VOTE: (0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
    ApiKey.END_QUORUM_EPOCH: (0, 1),
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.ALTER_PARTITION: (2, 3),
    ApiKey.UPDATE_FEATURES: (0, 2),
    ApiKey.FETCH_SNAPSHOT: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.BROKER_REGISTRATION: (0, 4),
    ApiKey.BROKER_HEARTBEAT: (0, 1),
    ApiKey.CONTROLLER_REGISTRATION: (0, 0),
    ApiKey.ADD_RAFT_VOTER: (0, 1),
    ApiKey.REMOVE_RAFT_VOTER: (0, 0),
    ApiKey.UPDATE_RAFT_VOTER: (0, 0),
}


def test_api_key_numbers_are_kafkas() -> None:
    assert (ApiKey.FETCH, ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.VOTE) == (1, 3, 18, 52)
    assert (ApiKey.FETCH_SNAPSHOT, ApiKey.CONTROLLER_REGISTRATION, ApiKey.UPDATE_RAFT_VOTER) == (59, 70, 82)


def test_default_registry_ranges() -> None:
    assert {key: (r.min_version, r.max_version) for key, r in KRAFT_NODE_APIS} == EXPECTED_DEFAULT


def test_default_registry_is_sorted_by_api_key() -> None:
    assert list(KRAFT_NODE_APIS.api_keys) == sorted(KRAFT_NODE_APIS.api_keys)


def test_fetch_versions_cover_directory_ids_and_topic_ids() -> None:
    fetch = KRAFT_NODE_APIS.range_of(ApiKey.FETCH)
    assert fetch is not None
    assert 17 in fetch  # ReplicaDirectoryId (KIP-853)
    assert 12 not in fetch  # no topic ids on the wire: KRaft rejects such fetches anyway


def test_supports_checks_key_and_version() -> None:
    assert KRAFT_NODE_APIS.supports(ApiKey.VOTE, 2)
    assert not KRAFT_NODE_APIS.supports(ApiKey.VOTE, 3)
    assert not KRAFT_NODE_APIS.supports(ApiKey.VOTE, -1)
    assert not KRAFT_NODE_APIS.supports(0, 0)  # Produce is not served by a KRaft node
    assert KRAFT_NODE_APIS.range_of(0) is None


def test_with_range_derives_a_node_without_pre_vote() -> None:
    old = KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 1)
    assert not old.supports(ApiKey.VOTE, 2)
    assert old.supports(ApiKey.VOTE, 1)
    assert KRAFT_NODE_APIS.supports(ApiKey.VOTE, 2)  # the original value is unchanged
    assert len(old) == len(KRAFT_NODE_APIS)


def test_without_removes_an_api() -> None:
    smaller = KRAFT_NODE_APIS.without(ApiKey.METADATA)
    assert ApiKey.METADATA not in smaller.api_keys
    assert len(smaller) == len(KRAFT_NODE_APIS) - 1


def test_registry_is_immutable_and_compares_by_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        KRAFT_NODE_APIS.ranges = ()  # type: ignore[misc]
    assert KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 2) == KRAFT_NODE_APIS


def test_versions_kio_lacks_are_rejected() -> None:
    with pytest.raises(ValueError, match="VOTE"):
        KRAFT_NODE_APIS.with_range(ApiKey.VOTE, 0, 3)
    with pytest.raises(ValueError):
        ApiRegistry.of({ApiKey.FETCH: (0, 18)})  # kio starts at Fetch v4


def test_duplicate_keys_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        ApiRegistry(((ApiKey.VOTE, VersionRange(0, 1)), (ApiKey.VOTE, VersionRange(2, 2))))


@pytest.mark.parametrize("bounds", [(-1, 2), (3, 2), (0, 0x8000)])
def test_version_range_rejects_nonsense(bounds: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        VersionRange(*bounds)


def test_version_range_membership() -> None:
    versions = VersionRange(2, 4)
    assert [v for v in range(7) if v in versions] == [2, 3, 4]
    assert "3" not in versions
    assert str(versions) == "2-4"


@pytest.mark.parametrize("registry", [KRAFT_NODE_APIS, NODE_RUNTIME_APIS], ids=["kraft", "runtime"])
def test_every_registered_class_really_loads(registry: ApiRegistry) -> None:
    # Construction only reads kio's index (kio_lists); this is the import check it no longer does, so an
    # index entry whose module is missing or broken fails here, not when a peer first sends that version.
    for key, versions in registry:
        for version in range(versions.min_version, versions.max_version + 1):
            assert kio_knows(key, version), (key.name, version)
            assert request_class(key, version).__api_key__ == key
            assert response_class(key, version).__version__ == version


@pytest.mark.parametrize(
    ("key", "version", "listed"),
    [(ApiKey.VOTE, 2, True), (ApiKey.VOTE, 99, False), (ApiKey.FETCH, 3, False), (9999, 0, False), (-1, 0, False)],
)
def test_index_check_agrees_with_loading(key: int, version: int, listed: bool) -> None:
    assert kio_lists(key, version) is listed
    assert kio_knows(key, version) is listed


def test_importing_the_registry_loads_no_schema_module() -> None:
    # The start-up cost this guards against: validating the registry used to import every schema module.
    # A fresh interpreter, because this test process has long since imported them.
    probe = (
        "import sys, pykraft.protocol.apis as apis; "
        "assert apis.NODE_RUNTIME_APIS.supports(0, 12); "
        "print(sorted(m for m in sys.modules if m.startswith(('kio.schema.produce.', 'kio.schema.fetch.'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
