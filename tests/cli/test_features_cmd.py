"""`pykraft features describe|upgrade` through a fake transport: Kafka's lines, exit codes, one-line errors."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v4 import response as av_resp
from kio.schema.update_features.v1 import response as uf_resp
from typer.testing import CliRunner

from pykraft.admin import connect
from pykraft.cli import metadata_quorum_cmd
from pykraft.cli.main import app
from pykraft.protocol.errors import ErrorCode

# tests/ is on sys.path (pytest's rootdir-based import of the tests/<area> packages)
from admin.fakes import ZERO_MS, FakeTransport, describe_cluster

runner = CliRunner()
A, B = ("127.0.0.1", 9093), ("127.0.0.1", 9094)


def features(*args: str):
    return runner.invoke(app, ["features", "--bootstrap-controller", "127.0.0.1:9093", *args])


@pytest.fixture()
def fake(monkeypatch) -> FakeTransport:
    transport = FakeTransport({A: lambda r: describe_cluster(2, {1: A, 2: B})})
    real = connect.make_client
    # features_cmd runs its requests through metadata_quorum_cmd.run_admin, which calls this make_client
    monkeypatch.setattr(metadata_quorum_cmd, "make_client", lambda *a, **k: real(*a, transport=transport, **k))
    return transport


def test_describe_prints_one_line_per_supported_feature(fake: FakeTransport):
    fake.handlers[B] = lambda r: av_resp.ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=(), throttle_time=ZERO_MS, finalized_features_epoch=310,
        supported_features=(av_resp.SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1),
                            av_resp.SupportedFeatureKey(name="metadata.version", min_version=7, max_version=27)),
        finalized_features=(av_resp.FinalizedFeatureKey(name="metadata.version", max_version_level=27,
                                                        min_version_level=27),))
    result = features("describe")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\tEpoch: 310",
        "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.1-IV1\t"
        "FinalizedVersionLevel: 4.1-IV1\tEpoch: 310",
    ]


def update_answer(seen: list, code: ErrorCode = ErrorCode.NONE, message: str | None = None):
    def handle(request):
        seen.append(request.message)
        return uf_resp.UpdateFeaturesResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.NONE, error_message=None,
            results=tuple(uf_resp.UpdatableFeatureResult(feature=u.feature, error_code=code, error_message=message)
                          for u in request.message.feature_updates))
    return handle


def test_upgrade_kraft_version(fake: FakeTransport):
    seen: list = []
    fake.handlers[B] = update_answer(seen)
    result = features("upgrade", "--feature", "kraft.version=1")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "kraft.version was upgraded to 1.\n"
    assert seen[0].validate_only is False
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in seen[0].feature_updates] == [
        ("kraft.version", 1, 1)]


def test_upgrade_dry_run_validates_only(fake: FakeTransport):
    seen: list = []
    fake.handlers[B] = update_answer(seen)
    result = features("upgrade", "--metadata", "4.1-IV1", "--feature", "kraft.version=1", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["kraft.version can be upgraded to 1.",
                                          "metadata.version can be upgraded to 27."]
    assert seen[0].validate_only is True


def test_failed_upgrade_prints_kafkas_lines_and_exits_1(fake: FakeTransport):
    fake.handlers[B] = update_answer([], ErrorCode.INVALID_UPDATE_VERSION, "kraft.version 1 needs metadata.version 21")
    result = features("upgrade", "--feature", "kraft.version=1")
    assert result.exit_code == 1
    assert result.stdout == ("Could not upgrade kraft.version to 1. "
                             "INVALID_UPDATE_VERSION: kraft.version 1 needs metadata.version 21\n")
    assert result.stderr == "pykraft features: 1 out of 1 operation(s) failed.\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["upgrade"], "You must specify at least one feature to upgrade"),
        (["upgrade", "--feature", "kraft.version"], "equals sign not found"),
        (["upgrade", "--feature", "kraft.version=1", "--feature", "kraft.version=1"], "specified more than once"),
        (["upgrade", "--metadata", "9.9-IV9"], "Unsupported metadata version 9.9-IV9"),
        (["upgrade", "--metadata", "4.1-IV1", "--feature", "metadata.version=27"], "specified more than once"),
        (["downgrade"], "You must specify at least one feature to downgrade"),
        (["disable"], "You must specify at least one feature to disable"),
        (["disable", "--feature", "kraft.version", "--feature", "kraft.version"], "specified more than once"),
        (["feature-dependencies", "--feature", "foo=1"], "Unknown feature: foo"),
        (["version-mapping", "--release-version", "9.9"], "Unknown release version '9.9'"),
    ],
)
def test_bad_flags_are_one_line(args, message, fake: FakeTransport):
    result = features(*args)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("pykraft features: ")
    assert message in result.stderr
    assert fake.sent == []
