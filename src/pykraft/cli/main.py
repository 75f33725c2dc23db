"""The `pykraft` command. Sub-commands are thin: each parses its flags and calls into the package."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from .server_fast import serve_if_asked

serve_if_asked(sys.argv)  # a plain `server start --config FILE` runs here, before typer is imported (server_fast.py)

import typer  # noqa: E402 - after the server's way out

app = typer.Typer(
    name="pykraft",
    help="Apache Kafka's KRaft metadata quorum and controller, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("dump-log")
def dump_log(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Segment (.log), snapshot (.checkpoint), index or producer snapshot (.snapshot) files.")] = None,
    files_option: Annotated[
        str | None, typer.Option("--files", help="Comma-separated files, as Kafka's kafka-dump-log takes them.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per record.")] = False,
    cluster_metadata_decoder: Annotated[
        bool,
        typer.Option("--cluster-metadata-decoder", help="Accepted for Kafka compatibility; always on."),
    ] = True,
) -> None:
    """Print every batch and record of metadata log segments and snapshots."""
    from .dump_log import dump_files

    paths = list(files or [])
    if files_option:
        paths += [Path(p) for p in files_option.split(",") if p]
    if not paths:
        raise typer.BadParameter("give at least one file", param_hint="FILES")
    raise typer.Exit(dump_files(paths, as_json))


@app.command("sample-log")
def sample_log(
    output: Annotated[Path, typer.Option("--output", help="Directory to write the sample metadata log into.")],
) -> None:
    """Write the metadata log a 3-controller, 3-broker cluster produces as it starts (for dump-log demos)."""
    from pykraft.storage import StorageError

    from .sample_log import write_sample_log

    try:
        paths = write_sample_log(output)
    except (OSError, StorageError) as exc:
        typer.echo(f"pykraft sample-log: {exc}", err=True)
        raise typer.Exit(1) from None
    for path in paths:
        typer.echo(f"wrote {path}")


def _register_storage() -> None:
    # storage_cmd imports only typer at module level; its commands import the storage code when they run.
    from .storage_cmd import storage_app

    app.add_typer(storage_app, name="storage")


_register_storage()


def _register_server() -> None:
    # server_cmd imports only typer at module level; `start` imports the node runtime when it runs.
    from .server_cmd import server_app

    app.add_typer(server_app, name="server")


_register_server()


def _register_sim() -> None:
    # sim_cmd imports only typer at module level; its commands import the simulator when they run.
    from .sim_cmd import sim_app

    app.add_typer(sim_app, name="sim")


_register_sim()

# metadata-quorum and features forward their arguments to their own typer apps, imported only when used; those
# apps print every failure, usage errors included, as one stderr line.
_FORWARD = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


@app.command("metadata-quorum", context_settings=_FORWARD, add_help_option=False)
def metadata_quorum(ctx: typer.Context) -> None:
    """Describe the KRaft quorum, add/remove controllers, reassign voters (kafka-metadata-quorum)."""
    from .metadata_quorum_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("features", context_settings=_FORWARD, add_help_option=False)
def features(ctx: typer.Context) -> None:
    """Describe and upgrade feature flags, e.g. kraft.version (kafka-features)."""
    from .features_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("topics", context_settings=_FORWARD, add_help_option=False)
def topics(ctx: typer.Context) -> None:
    """Create, delete, describe and list topics (kafka-topics)."""
    from .topics_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("configs", context_settings=_FORWARD, add_help_option=False)
def configs(ctx: typer.Context) -> None:
    """Describe and alter topic, broker and broker-logger configs (kafka-configs)."""
    from .configs_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("acls", context_settings=_FORWARD, add_help_option=False)
def acls(ctx: typer.Context) -> None:
    """Add, remove and list ACLs (kafka-acls)."""
    from .acls_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("brokers", context_settings=_FORWARD, add_help_option=False)
def brokers(ctx: typer.Context) -> None:
    """List the registered brokers (ID, host, port, rack, fenced/unfenced)."""
    from .brokers_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("delete-records", context_settings=_FORWARD, add_help_option=False)
def delete_records(ctx: typer.Context) -> None:
    """Delete records of partitions down to an offset (kafka-delete-records)."""
    from .delete_records_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("log-dirs", context_settings=_FORWARD, add_help_option=False)
def log_dirs(ctx: typer.Context) -> None:
    """Describe the brokers' log directories and the partitions in them (kafka-log-dirs)."""
    from .log_dirs_cmd import run

    raise typer.Exit(run(ctx.args))


@app.command("quickstart")
def quickstart(
    directory: Annotated[Path | None, typer.Option("--dir", help="Where the nodes live (default: a new "
                                                   "./pykraft-quickstart-<time> directory).")] = None,
    controllers: Annotated[int, typer.Option("--controllers", min=1, max=9, help="Initial voters.")] = 3,
    observers: Annotated[int, typer.Option("--observers", min=0, max=9, help="Controllers that follow as "
                                           "observers.")] = 0,
    brokers: Annotated[int, typer.Option("--brokers", min=0, max=9, help="Broker processes (they register with "
                                         "the controller; a topic is created on them).")] = 3,
    duration: Annotated[float, typer.Option("--duration", min=0, help="Seconds to run; 0 = until Ctrl-C.")] = 0,
    rate: Annotated[int, typer.Option("--rate", min=1, help="Records per second to write.")] = 2000,
    status_interval: Annotated[float, typer.Option("--status-interval", min=0.5, help="Seconds between status "
                                                   "lines.")] = 3.0,
    reset: Annotated[bool, typer.Option("--reset", help="Replace a previous quickstart in --dir.")] = False,
) -> None:
    """Format and start a local cluster on 127.0.0.1, write records through the leader, print its status."""
    from .quickstart import run_quickstart

    raise typer.Exit(run_quickstart(directory, controllers, observers, duration, rate, status_interval, reset,
                                    brokers))


@app.command("analyze")
def analyze(
    dirs: Annotated[list[Path] | None, typer.Argument(help="Node data directories, folders of them, or many "
                                                           "clusters'.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Where the Parquet tables, summary.json and report.html go.")] = \
        Path("pykraft-analysis"),
    master: Annotated[str, typer.Option("--master", help="Spark master URL, e.g. spark://127.0.0.1:7077.")] = "local[2]",
    at_offset: Annotated[int | None, typer.Option("--at-offset", min=0, help="The image after this offset.")] = None,
    at_time: Annotated[str | None, typer.Option("--at-time", help="The image at this ISO-8601 time.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print summary.json instead of the verdict lines.")] = False,
    stream: Annotated[bool, typer.Option("--stream", help="Tail a live cluster's committed records into "
                                         "OUT/stream_records (Parquet) instead.")] = False,
    bootstrap_controller: Annotated[str | None, typer.Option("--bootstrap-controller", help="With --stream: a "
                                                             "controller's host:port.")] = None,
    checkpoint: Annotated[Path | None, typer.Option("--checkpoint", help="With --stream: the query's checkpoint "
                                                    "(default OUT/_checkpoint); a restart resumes from it.")] = None,
    available_now: Annotated[bool, typer.Option("--available-now", help="With --stream: stop once every record "
                                                "committed at the start is written.")] = False,
) -> None:
    """Analyze a cluster's logs, snapshots and traces on Spark: tables, image, audits, report (exit 1: an audit
    failed, 2: bad input)."""
    from .analyze_cmd import run_analyze, run_stream

    if stream:
        raise typer.Exit(run_stream(bootstrap_controller, out, master, checkpoint, available_now))
    raise typer.Exit(run_analyze(dirs or [], out, master, at_offset, at_time, as_json))


def main() -> None:
    app()  # click turns a broken output pipe (`... | head`) into a quiet exit


if __name__ == "__main__":
    main()
