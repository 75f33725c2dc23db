"""`pykraft sim run` and `pykraft sim sweep`: the deterministic simulator from the command line."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

sim_app = typer.Typer(help="Deterministic cluster simulation (seeded runs, invariants, sweeps).",
                      no_args_is_help=True, add_completion=False)


@sim_app.command("run")
def run_command(
    seed: Annotated[int, typer.Option("--seed", help="The seed: the same seed replays the same run.")],
    scenario: Annotated[str, typer.Option("--scenario", help="A scenario name (see `pykraft sim list`).")] = "swarm",
    trace: Annotated[int, typer.Option("--trace", help="How many of the last events to print on failure.")] = 60,
    max_events: Annotated[int, typer.Option("--max-events", help="Stop after this many events.")] = 400_000,
    export: Annotated[str | None, typer.Option("--export", help="Write the nodes' logs, snapshots, traces and the "
                                               "client history in a node's layout under this folder.")] = None,
) -> None:
    """Run one seed; print a summary, and on a violation the invariant, the last events and the replay command."""
    from pykraft.sim.engine.runner import run

    try:
        if export:
            from pykraft.sim.engine.export import run_and_export

            result = run_and_export(seed, scenario, export, max_events=max_events, trace_size=trace)
        else:
            result = run(seed, scenario, max_events=max_events, trace_size=trace)
    except KeyError as error:
        typer.echo(f"pykraft sim run: {error.args[0]}", err=True)
        raise typer.Exit(2) from None
    typer.echo(result.report())
    raise typer.Exit(0 if result.ok else 1)


@sim_app.command("list")
def list_command() -> None:
    """The scenario names."""
    from pykraft.sim.scenarios.registry import SCENARIOS

    for name in sorted(SCENARIOS):
        typer.echo(name)


@sim_app.command("sweep")
def sweep_command(
    seeds: Annotated[int, typer.Option("--seeds", help="How many seeds.")] = 100,
    start: Annotated[int, typer.Option("--start", help="The first seed.")] = 0,
    jobs: Annotated[int, typer.Option("--jobs", help="Worker processes.")] = 1,
    scenario: Annotated[str, typer.Option("--scenario", help="Scenario for every seed.")] = "swarm",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON summary object instead of tables.")] = False,
    export: Annotated[str | None, typer.Option("--export", help="Then write every seed's run in a node's layout "
                                               "under this folder (runs replay from their seeds).")] = None,
) -> None:
    """Run many seeds; print a table of runs, events, violations and election/commit statistics."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from pykraft.sim.scenarios.registry import SCENARIOS
    from pykraft.sim.engine.sweep import sweep

    if scenario not in SCENARIOS:
        typer.echo(f"pykraft sim sweep: unknown scenario {scenario!r}", err=True)
        raise typer.Exit(2)
    started = time.perf_counter()
    console = Console(stderr=as_json)
    with Progress(console=console, transient=True, disable=as_json) as progress:
        task = progress.add_task(f"{scenario} x {seeds}", total=seeds)
        summary = sweep(range(start, start + seeds), scenario, jobs=jobs,
                        on_result=lambda _: progress.advance(task))
    if export:
        from pykraft.sim.engine.export import export_seeds

        export_seeds(range(start, start + seeds), scenario, export, jobs)
    wall = time.perf_counter() - started
    if as_json:
        document = summary.to_json()
        document["wall_s"] = round(wall, 2)
        typer.echo(json.dumps(document))
        raise typer.Exit(0 if not summary.violations else 1)
    totals = summary.totals()
    table = Table(title=f"pykraft sim sweep: {scenario}, seeds {start}..{start + seeds - 1}, {jobs} jobs, "
                        f"{wall:.1f} s wall")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, value in totals.items():
        table.add_row(key, str(value))
    console.print(table)
    if summary.violations:
        bad = Table(title="violations")
        for column in ("seed", "invariant", "replay"):
            bad.add_column(column)
        for result in summary.violations:
            bad.add_row(str(result.seed), str(result.invariant), result.replay_command())
        console.print(bad)
    raise typer.Exit(0 if not summary.violations else 1)


@sim_app.command("groups")
def groups_command(
    seeds: Annotated[int, typer.Option("--seeds", help="How many seeds.")] = 100,
    start: Annotated[int, typer.Option("--start", help="The first seed (--seeds 1 --start N replays seed N).")] = 0,
    steps: Annotated[int, typer.Option("--steps", help="Fault-and-heartbeat events per run.")] = 600,
) -> None:
    """KIP-848 consumer groups over the pure coordinator: members join, leave, crash, restart, lose answers and
    revoke slowly while the coordinator fails over; single owner, monotonic commits, liveness, persistence."""
    from pykraft.sim.consumer_groups import run

    began, failed = time.monotonic(), []
    totals = {"events": 0, "commits": 0, "rebalances": 0, "failovers": 0}
    for seed in range(start, start + seeds):
        result = run(seed, steps)
        for key in totals:
            totals[key] += getattr(result, key)
        if not result.ok:
            failed.append(result)
            typer.echo(f"{result.violation}\n  replay: pykraft sim groups --seeds 1 --start {seed} --steps {steps}")
    typer.echo(f"{seeds - len(failed)}/{seeds} seeds passed in {time.monotonic() - began:.1f} s: "
               + ", ".join(f"{value} {key}" for key, value in totals.items()))
    raise typer.Exit(1 if failed else 0)
