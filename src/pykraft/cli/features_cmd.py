"""`pykraft features`: Kafka's kafka-features `describe` and `upgrade` against the controller quorum.

describe prints one line per supported feature (reference §6.3). upgrade sends UpdateFeatures (upgrade type 1,
ValidateOnly with --dry-run) and prints Kafka's per-feature result lines; any failed feature makes the tool exit 1
with "N out of M operation(s) failed." on stderr, as Kafka's tool does. `upgrade --feature kraft.version=1` is the
static-to-dynamic quorum conversion (KAFKA-16538).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pykraft.admin.client import AdminClient

from . import quorum_output as out
from .metadata_quorum_cmd import (
    BootstrapController,
    BootstrapServer,
    Connection,
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
            ] = None) -> None:
    # The bootstrap flags are checked when a request is about to be sent (make_client): click runs this callback
    # before it parses the sub-command, so checking here would break `describe --help`.
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config)


@app.command("describe")
def describe(ctx: typer.Context) -> None:
    """Describe the supported and finalized feature levels."""
    features = run_admin(ctx.obj, lambda client: client.describe_features())
    for line in out.feature_lines(features):
        typer.echo(line)


@app.command("upgrade")
def upgrade(
    ctx: typer.Context,
    feature: Annotated[list[str] | None, typer.Option(
        "--feature", help="A feature upgrade in feature=level form, e.g. kraft.version=1 (repeatable).")] = None,
    metadata: Annotated[str | None, typer.Option(
        "--metadata", help="The metadata.version to upgrade to, e.g. 4.1-IV1.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate the upgrade, but do not perform it.")] = False,
) -> None:
    """Upgrade one or more feature flags."""
    levels: dict[str, int] = {}
    if metadata is not None:
        if metadata not in out.METADATA_VERSION_LEVELS:
            raise ToolFailure(f"Unsupported metadata version {metadata}. Supported metadata versions are "
                              + ", ".join(out.METADATA_VERSION_LEVELS))
        levels["metadata.version"] = out.METADATA_VERSION_LEVELS[metadata]
    try:
        for name, level in out.parse_levels(feature or []).items():
            if name in levels:
                raise ValueError(f"Feature {name} was specified more than once.")
            levels[name] = level
    except ValueError as exc:
        raise ToolFailure(str(exc)) from None
    if not levels:
        raise ToolFailure("You must specify at least one feature to upgrade")

    async def operation(client: AdminClient) -> dict:
        return await client.update_features(levels, dry_run=dry_run)

    results = run_admin(ctx.obj, operation)
    failures = 0
    for name in sorted(results):
        error = results[name]
        failures += error is not None
        typer.echo(out.feature_update_line("upgrade", name, levels[name], None if error is None else str(error),
                                           dry_run))
    if failures:
        raise ToolFailure(f"{failures} out of {len(levels)} operation(s) failed.")
