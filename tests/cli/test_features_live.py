"""`pykraft features upgrade` against a running controller (in-process, 127.0.0.1): --metadata with a release name
or a bare release, --feature metadata.version=N, --release-version, --dry-run, and the controller's refusals
(downgrade, unknown feature, level out of range) as Kafka's lines with exit 1. The CLI runs in a worker thread
(it has its own event loop) while the node serves on the test's loop."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.storage.format import FormatPlan, bootstrap_checkpoint_bytes

# tests/ is on sys.path (pytest's rootdir-based import of the tests/<area> packages)
from node.helpers import free_ports, leader_of, make_config, wait_for

runner = CliRunner()


@pytest_asyncio.fixture()
async def controller(tmp_path):
    ports = {1: free_ports(1)[0]}
    config = make_config(tmp_path, 1, ports)
    (tmp_path / "node-1" / "bootstrap.checkpoint").write_bytes(bootstrap_checkpoint_bytes(FormatPlan(21, 0, ()), 0))
    runtime = controller_runtime(config)
    await runtime.start()
    host = runtime.state_machine
    assert isinstance(host, ControllerHost)
    await wait_for(lambda: leader_of([runtime]) is not None and host.controller.features.metadata_version == 21)
    try:
        yield ports[1], host
    finally:
        await runtime.stop(graceful=False)


async def features(port: int, *args: str):
    return await asyncio.to_thread(runner.invoke, app, ["features", "--bootstrap-controller", f"127.0.0.1:{port}",
                                                        *args])


@pytest.mark.asyncio
async def test_upgrade_metadata_version_by_release_by_level_and_by_release_version(controller):
    port, host = controller
    dry = await features(port, "upgrade", "--metadata", "4.0", "--dry-run")
    assert (dry.exit_code, dry.stdout) == (0, "metadata.version can be upgraded to 25.\n"), dry.stderr
    assert host.controller.features.metadata_version == 21  # a dry run changes nothing
    result = await features(port, "upgrade", "--metadata", "4.0")  # a bare release: its latest level, 4.0-IV3
    assert (result.exit_code, result.stdout) == (0, "metadata.version was upgraded to 25.\n"), result.stderr
    assert host.controller.features.metadata_version == 25
    result = await features(port, "upgrade", "--feature", "metadata.version=26")
    assert (result.exit_code, result.stdout) == (0, "metadata.version was upgraded to 26.\n"), result.stderr
    result = await features(port, "upgrade", "--release-version", "4.1-IV1")
    assert (result.exit_code, result.stdout) == (0, "metadata.version was upgraded to 27.\n"), result.stderr
    assert host.controller.features.metadata_version == 27


@pytest.mark.asyncio
@pytest.mark.parametrize(("args", "line"), [
    (["--metadata", "3.8"], "Could not upgrade metadata.version to 20. INVALID_UPDATE_VERSION: Invalid update "
                            "version 20 for feature metadata.version. Can't downgrade the version of this feature"),
    (["--feature", "foo.version=1"], "Could not upgrade foo.version to 1. INVALID_UPDATE_VERSION: Invalid update "
                                     "version 1 for feature foo.version. Local controller 1 does not support this "
                                     "feature."),
    (["--feature", "metadata.version=28"], "Could not upgrade metadata.version to 28. INVALID_UPDATE_VERSION: "
                                           "Invalid update version 28 for feature metadata.version. Local "
                                           "controller 1 only supports versions 7-27."),
], ids=["downgrade", "unknown-feature", "level-out-of-range"])
async def test_refusals_print_kafkas_line_and_exit_1(controller, args, line):
    port, host = controller
    result = await features(port, "upgrade", *args)
    assert result.exit_code == 1
    assert result.stdout.startswith(line)
    assert result.stderr == "pykraft features: 1 out of 1 operation(s) failed.\n"
    assert host.controller.features.metadata_version == 21


@pytest.mark.asyncio
async def test_metadata_and_release_version_together_are_refused_before_sending(controller):
    port, _ = controller
    result = await features(port, "upgrade", "--metadata", "4.0", "--release-version", "4.1")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == "pykraft features: Only one of --metadata and --release-version can be given.\n"
    unknown = await features(port, "upgrade", "--release-version", "9.9")
    assert unknown.exit_code == 1 and "Unsupported metadata version 9.9." in unknown.stderr


@pytest.mark.asyncio
async def test_describe_shows_the_finalized_metadata_version_of_the_controller_image(controller):
    port, host = controller
    before = await features(port, "describe")
    assert before.exit_code == 0, before.stderr
    assert "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.1-IV1\t" \
           "FinalizedVersionLevel: 3.9-IV0\t" in before.stdout
    assert (await features(port, "upgrade", "--metadata", "4.0")).exit_code == 0
    after = await features(port, "describe")
    assert "FinalizedVersionLevel: 4.0-IV3\t" in after.stdout, after.stdout


@pytest.mark.asyncio
async def test_transaction_version_upgrades_to_2_and_no_further(controller):
    """The controller (3.9-IV0 here: transaction.version not finalized) takes transaction.version 1 then 2, which
    describe shows supported 0-2; 3 is out of its range."""
    port, host = controller
    before = await features(port, "describe")
    assert "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 0\t" \
        in before.stdout, before.stdout
    for level in (1, 2):
        result = await features(port, "upgrade", "--feature", f"transaction.version={level}")
        assert (result.exit_code, result.stdout) == (0, f"transaction.version was upgraded to {level}.\n"), \
            result.stderr
    assert host.controller.features.finalized.get("transaction.version") == 2
    after = await features(port, "describe")
    assert "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\t" \
        in after.stdout, after.stdout
    too_high = await features(port, "upgrade", "--feature", "transaction.version=3")
    assert too_high.exit_code == 1 and "Local controller 1 only supports versions 0-2." in too_high.stdout


@pytest.mark.asyncio
async def test_downgrade_and_disable_send_downgrades_and_print_kafkas_lines(controller):
    """Issue 15: downgrade and disable reach the controller as downgrades; it supports none, so each prints Kafka's
    "Could not ..." line with the controller's reason and the tool exits 1; nothing changes."""
    port, host = controller
    down = await features(port, "downgrade", "--metadata", "3.8", "--dry-run")
    assert down.exit_code == 1
    assert down.stdout.startswith("Can not downgrade metadata.version to 20. INVALID_UPDATE_VERSION: Invalid update "
                                  "version 20 for feature metadata.version. This controller does not support "
                                  "downgrading metadata.version from 21.")
    assert down.stderr == "pykraft features: 1 out of 1 operation(s) failed.\n"
    unsafe = await features(port, "downgrade", "--feature", "metadata.version=20", "--unsafe")
    assert unsafe.stdout.startswith("Could not downgrade metadata.version to 20. ") and unsafe.exit_code == 1
    off = await features(port, "disable", "--feature", "metadata.version")
    assert off.exit_code == 1 and off.stdout.startswith("Could not disable metadata.version. INVALID_UPDATE_VERSION")
    assert host.controller.features.metadata_version == 21
    # Downgrading to the level already finalized changes nothing and succeeds, as Kafka's controller answers it.
    same = await features(port, "downgrade", "--metadata", "3.9-IV0")
    assert (same.exit_code, same.stdout) == (0, "metadata.version was downgraded to 21.\n"), same.stderr


def test_version_mapping_and_feature_dependencies_offline():
    for group in ("features", "storage"):
        mapping = runner.invoke(app, [group, "version-mapping", "--release-version", "3.9-IV0"])
        assert (mapping.exit_code, mapping.stdout) == (0, "metadata.version=21 (3.9-IV0)\nkraft.version=1\n"
                                                          "transaction.version=0\ngroup.version=0\n")
        older = runner.invoke(app, [group, "version-mapping", "--release-version", "3.8"])
        assert older.stdout == "metadata.version=20 (3.8-IV0)\nkraft.version=0\ntransaction.version=0\ngroup.version=0\n"
        newer = runner.invoke(app, [group, "version-mapping", "--release-version", "4.0"])
        assert newer.stdout == ("metadata.version=25 (4.0-IV3)\nkraft.version=1\ntransaction.version=2\n"
                                "group.version=1\n")
        # transaction.version 1 and 2 both bootstrap from 4.0-IV2 (Kafka 4.0's TransactionVersion): not 4.0-IV1
        before = runner.invoke(app, [group, "version-mapping", "--release-version", "4.0-IV1"])
        assert "transaction.version=0\n" in before.stdout
        at = runner.invoke(app, [group, "version-mapping", "--release-version", "4.0-IV2"])
        assert "transaction.version=2\n" in at.stdout
        txn_deps = runner.invoke(app, [group, "feature-dependencies", "--feature", "transaction.version=2"])
        assert (txn_deps.exit_code, txn_deps.stdout) == (0, "transaction.version=2 has no dependencies.\n")
        too_high = runner.invoke(app, [group, "feature-dependencies", "--feature", "transaction.version=3"])
        assert too_high.exit_code != 0
        group_deps = runner.invoke(app, [group, "feature-dependencies", "--feature", "group.version=1"])
        assert (group_deps.exit_code, group_deps.stdout) == (0, "group.version=1 has no dependencies.\n")
        deps = runner.invoke(app, [group, "feature-dependencies", "--feature", "kraft.version=1",
                                   "--feature", "metadata.version=27"])
        assert (deps.exit_code, deps.stdout) == (0, "kraft.version=1 requires:\n    metadata.version=21 (3.9-IV0)\n"
                                                    "metadata.version=27 has no dependencies.\n")
