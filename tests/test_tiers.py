"""The tier table of tests/conftest.py names places that exist (a renamed module must not drop out of its tier
unnoticed), and every marker it applies is declared in pyproject.toml (strict markers)."""

from __future__ import annotations

import tomllib

import pytest

from conftest import TESTS, TIERS, tiers_of  # tests/conftest.py (tests/ is on the path of its root modules)


@pytest.mark.parametrize("marker", sorted(TIERS))
def test_every_place_of_a_tier_exists(marker: str) -> None:
    assert [p for p in TIERS[marker] if not (TESTS / p.rstrip("/")).exists()] == []


def test_every_tier_marker_is_declared() -> None:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    declared = {line.split(":")[0] for line in config["markers"]}
    assert set(TIERS) <= declared


def test_a_folder_entry_covers_its_modules_and_a_module_entry_only_itself() -> None:
    assert tiers_of("e2e/test_tls_cluster.py") == ["e2e"]
    assert tiers_of("node/test_cluster.py") == ["e2e"]
    assert tiers_of("node/test_cluster_ids.py") == []
