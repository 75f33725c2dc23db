"""`pykraft features`: Kafka's kafka-features `describe`, `upgrade`, `downgrade`, `disable` against the controller
quorum, and the offline `version-mapping` and `feature-dependencies` (feature_versions.py).

describe prints one line per supported feature (reference §6.3), metadata.version levels as release names
("4.1-IV1", Kafka's MetadataVersion). upgrade sends UpdateFeatures (upgrade type 1, ValidateOnly with --dry-run) to
the active controller, which decides (downgrades, unknown features and unsupported levels are refused there), and
prints Kafka's per-feature result lines; any failed feature makes the tool exit 1 with "N out of M operation(s)
failed." on stderr, as Kafka's tool does. The metadata.version to upgrade to is given as `--metadata 4.1-IV1`,
`--release-version 4.1-IV1` (Kafka 4's name for the same; pykraft finalizes no other feature a release implies, so
both set metadata.version only) or `--feature metadata.version=27`; a bare release ("4.0") means its latest level,
as Kafka's MetadataVersion.fromVersionString reads it. `upgrade --feature kraft.version=1` is the static-to-dynamic
quorum conversion (KAFKA-16538). downgrade (--unsafe for an unsafe one) and disable (level 0) send the downgrade
upgrade types and print Kafka's lines ("X was downgraded to N.", "X was disabled.", "Could not disable X. ...");
the controller refuses what it cannot do (it supports no downgrade of a finalized level).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykraft.admin.client import AdminClient
from pykraft.storage.format_options import FormatError, parse_release_version

from . import quorum_output as out
from .feature_versions import FeatureVersionError, feature_dependencies_lines, version_mapping_lines
from .metadata_quorum_cmd import (
    BootstrapController,
    BootstrapServer,
    Connection,
    Timeout,
    ToolFailure,
    invoke,
    run_admin,
)

PROG = "pykraft features"

app = typer.Typer(name="features", add_completion=False, pretty_exceptions_enable=False,
                  help="Describe and upgrade feature flags (Kafka's kafka-features).")


def run(args: list[str]) -> int:
    return invoke(app, args, PROG)


@app.callback()
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None,
            bootstrap_controller: BootstrapController = None,
            command_config: Annotated[Path | None, typer.Option(
                "--command-config", help="Properties for the admin client (security.protocol, ssl.*, timeouts).")
            ] = None, timeout: Timeout = None) -> None:
    # The bootstrap flags are checked when a request is about to be sent (make_client): click runs this callback
    # before it parses the sub-command, so checking here would break `describe --help`.
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config, timeout)


@app.command("describe")
def describe(ctx: typer.Context) -> None:
    """Describe the supported and finalized feature levels."""
    features = run_admin(ctx.obj, lambda client: client.describe_features())
    for line in out.feature_lines(features):
        typer.echo(line)


Feature = Annotated[list[str] | None, typer.Option(
    "--feature", help="A feature update in feature=level form, e.g. kraft.version=1 (repeatable).")]
Metadata = Annotated[str | None, typer.Option("--metadata", help="The metadata.version, e.g. 4.1-IV1 or 4.0.")]
ReleaseVersion = Annotated[str | None, typer.Option(
    "--release-version", help="The release whose metadata.version to use, e.g. 4.1-IV1 or 4.0.")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Validate the change, but do not perform it.")]
Unsafe = Annotated[bool, typer.Option("--unsafe", help="Allow a downgrade that may lose metadata.")]
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # UpdateFeatures' upgrade types


@app.command("upgrade")
def upgrade(ctx: typer.Context, feature: Feature = None, metadata: Metadata = None,
            release_version: ReleaseVersion = None, dry_run: DryRun = False) -> None:
    """Upgrade one or more feature flags."""
    _update(ctx, "upgrade", _levels(feature, metadata, release_version), dry_run, UPGRADE)


@app.command("downgrade")
def downgrade(ctx: typer.Context, feature: Feature = None, metadata: Metadata = None,
              release_version: ReleaseVersion = None, unsafe: Unsafe = False, dry_run: DryRun = False) -> None:
    """Downgrade one or more feature flags (the controller decides whether it can)."""
    _update(ctx, "downgrade", _levels(feature, metadata, release_version), dry_run,
            UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE)


@app.command("disable")
def disable(ctx: typer.Context, feature: Annotated[list[str] | None, typer.Option(
                "--feature", help="A feature to disable (level 0; repeatable).")] = None,
            unsafe: Unsafe = False, dry_run: DryRun = False) -> None:
    """Disable one or more feature flags: the same as downgrading them to level 0."""
    levels: dict[str, int] = {}
    for name in feature or []:
        if name in levels:
            raise ToolFailure(f"Feature {name} was specified more than once.")
        levels[name] = 0
    _update(ctx, "disable", levels, dry_run, UNSAFE_DOWNGRADE if unsafe else SAFE_DOWNGRADE)


@app.command("version-mapping")
def version_mapping(release_version: ReleaseVersion = None) -> None:
    """The feature levels a release finalizes (default: the latest)."""
    _print_lines(lambda: version_mapping_lines(release_version))


@app.command("feature-dependencies")
def feature_dependencies(feature: Feature = None) -> None:
    """The features a feature level depends on."""
    _print_lines(lambda: feature_dependencies_lines(feature or []))


def _print_lines(build) -> None:  # a zero-argument callable returning lines
    try:
        lines = build()
    except FeatureVersionError as exc:
        raise ToolFailure(str(exc)) from None
    for line in lines:
        typer.echo(line)


def _levels(feature: list[str] | None, metadata: str | None, release_version: str | None) -> dict[str, int]:
    if metadata is not None and release_version is not None:
        raise ToolFailure("Only one of --metadata and --release-version can be given.")
    levels: dict[str, int] = {}
    if metadata is not None or release_version is not None:
        levels["metadata.version"] = _metadata_level(metadata if metadata is not None else str(release_version))
    try:
        for name, level in out.parse_levels(feature or []).items():
            if name in levels:
                raise ValueError(f"Feature {name} was specified more than once.")
            levels[name] = level
    except ValueError as exc:
        raise ToolFailure(str(exc)) from None
    return levels


def _update(ctx: typer.Context, op: str, levels: dict[str, int], dry_run: bool, upgrade_type: int) -> None:
    """UpdateFeatures with Kafka's per-feature result lines; "N out of M operation(s) failed." and exit 1."""
    if not levels:
        raise ToolFailure(f"You must specify at least one feature to {op}")

    async def operation(client: AdminClient) -> dict:
        return await client.update_features(levels, dry_run=dry_run, upgrade_type=upgrade_type)

    results = run_admin(ctx.obj, operation)
    failures = 0
    for name in sorted(results):
        error = results[name]
        failures += error is not None
        typer.echo(out.feature_update_line(op, name, levels[name], None if error is None else str(error), dry_run))
    if failures:
        raise ToolFailure(f"{failures} out of {len(levels)} operation(s) failed.")


def _metadata_level(text: str) -> int:
    try:
        return parse_release_version(text)
    except FormatError:
        raise ToolFailure(f"Unsupported metadata version {text}. Supported metadata versions are "
                          + ", ".join(out.METADATA_VERSION_LEVELS)) from None
