"""The `pykraft` command. Sub-commands are thin: each parses its flags and calls into the package."""

from __future__ import annotations

import os
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


def _version(value: bool) -> None:
    if value:
        from .versions import version_line

        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print pykraft's version and exit.")] = False) -> None:
    """Apache Kafka's KRaft metadata quorum, its controller and brokers, in Python; Kafka's tools as sub-commands."""


@app.command("dump-log")
def dump_log(
    files: Annotated[list[Path] | None, typer.Argument(
        help="Segment (.log), snapshot (.checkpoint), index or producer snapshot (.snapshot) files.")] = None,
    files_option: Annotated[
        str | None, typer.Option("--files", help="Comma-separated files, as Kafka's kafka-dump-log takes them.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per record.")] = False,
    cluster_metadata_decoder: Annotated[bool, typer.Option(
        "--cluster-metadata-decoder", help="Decode records as metadata records (the default for __cluster_metadata-0 "
                                           "files and snapshots).")] = False,
    offsets_decoder: Annotated[bool, typer.Option(
        "--offsets-decoder", help="Decode records as __consumer_offsets keys and values.")] = False,
    print_data_log: Annotated[bool, typer.Option(
        "--print-data-log", help="Print the records' keys and values (implies --deep-iteration).")] = False,
    deep_iteration: Annotated[bool, typer.Option(
        "--deep-iteration", help="Print every record, not only the batches.")] = False,
    skip_record_metadata: Annotated[bool, typer.Option(
        "--skip-record-metadata", help="Leave out each record's offset, sizes, sequence and header keys.")] = False,
) -> None:
    """Print the batches and records of log segments and snapshots (Kafka's kafka-dump-log)."""
    from .dump_log import Decoding, dump_files

    paths = list(files or [])
    if files_option:
        paths += [Path(p) for p in files_option.split(",") if p]
    if not paths:
        raise typer.BadParameter("give at least one file", param_hint="FILES")
    if cluster_metadata_decoder and offsets_decoder:
        raise typer.BadParameter("give at most one of --cluster-metadata-decoder and --offsets-decoder")
    decoder = "metadata" if cluster_metadata_decoder else "offsets" if offsets_decoder else None
    # Kafka: any decoder option implies --print-data-log, which implies --deep-iteration.
    print_data = print_data_log or decoder is not None
    decoding = Decoding(decoder, deep_iteration or print_data, print_data, skip_record_metadata)
    raise typer.Exit(dump_files(paths, as_json, decoding=decoding))


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

# The tools below take their arguments unparsed (KAFKA_TOOLS).
_FORWARD = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


# Kafka's operator tools: each module parses its kafka-*.sh flags itself and returns the exit status (its usage
# errors, too, are one stderr line); imported only when used.
KAFKA_TOOLS = {
    "metadata-quorum": ("metadata_quorum_cmd", "Describe the KRaft quorum, add/remove controllers, reassign voters "
                                               "(kafka-metadata-quorum)."),
    "features": ("features_cmd", "Describe and upgrade feature flags, e.g. kraft.version (kafka-features)."),
    "topics": ("topics_cmd", "Create, delete, describe and list topics (kafka-topics)."),
    "reassign-partitions": ("reassign_partitions_cmd", "Move partition replicas between brokers: generate, execute, "
                                                       "verify, cancel, list (kafka-reassign-partitions)."),
    "configs": ("configs_cmd", "Describe and alter topic, broker and broker-logger configs (kafka-configs)."),
    "acls": ("acls_cmd", "Add, remove and list ACLs (kafka-acls)."),
    "brokers": ("brokers_cmd", "List the registered brokers (ID, host, port, rack, fenced/unfenced)."),
    "delete-records": ("delete_records_cmd", "Delete records of partitions down to an offset "
                                             "(kafka-delete-records)."),
    "transactions": ("transactions_cmd", "List, describe and abort transactions, find hanging ones "
                                         "(kafka-transactions)."),
    "log-dirs": ("log_dirs_cmd", "Describe the brokers' log directories and the partitions in them "
                                 "(kafka-log-dirs)."),
    "consumer-groups": ("consumer_groups_cmd", "List, describe, delete consumer groups; reset their offsets "
                                               "(kafka-consumer-groups)."),
    "console-producer": ("console_producer_cmd", "Read lines from standard input and produce them to a topic "
                                                 "(kafka-console-producer)."),
    "console-consumer": ("console_consumer_cmd", "Consume a topic and print its records (kafka-console-consumer)."),
    "get-offsets": ("get_offsets_cmd", "Print the offsets of topic partitions at a time (kafka-get-offsets)."),
    "leader-election": ("leader_election_cmd", "Elect preferred or unclean leaders (kafka-leader-election)."),
    "cluster": ("cluster_cmd", "Print the cluster id, unregister a broker (kafka-cluster)."),
    "broker-api-versions": ("broker_api_versions_cmd", "Print the API versions every broker supports "
                                                       "(kafka-broker-api-versions)."),
    "metadata-shell": ("metadata_shell_cmd", "Browse the metadata image of a snapshot or a metadata log directory "
                                             "(kafka-metadata-shell)."),
    "producer-perf-test": ("producer_perf_cmd", "Measure producing to a topic (kafka-producer-perf-test)."),
    "consumer-perf-test": ("consumer_perf_cmd", "Measure consuming a topic (kafka-consumer-perf-test)."),
}


def _kafka_tool(module: str, summary: str):  # a typer command
    def command(ctx: typer.Context) -> None:
        import importlib

        raise typer.Exit(importlib.import_module(f"pykraft.cli.{module}").run(ctx.args))

    command.__doc__ = summary
    return command


def _register_kafka_tools() -> None:
    for name, (module, summary) in KAFKA_TOOLS.items():
        app.command(name, context_settings=_FORWARD, add_help_option=False)(_kafka_tool(module, summary))


_register_kafka_tools()


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


def run_cli(args: list[str]) -> int:
    """The exit status of `pykraft ARGS`. Every usage problem of every sub-command ends here as one stderr line,
    `pykraft <command>: <problem>`, and exit status 1, as Kafka's tools exit on a bad command line (typer's own
    rendering would print a framed usage block and exit 2). The Kafka tools (KAFKA_TOOLS) and the forwarding
    commands parse their own lines and return their status through typer.Exit."""
    from typer._click import exceptions as click_errors

    try:
        result = app(args=args, prog_name="pykraft", standalone_mode=False)
    except click_errors.NoArgsIsHelpError:
        return 1  # typer printed the help while building the error; Kafka's tools exit 1 after their usage
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "pykraft"
        typer.echo(f"{where}: {' '.join(exc.format_message().split())}", err=True)
        return 1
    except click_errors.ClickException as exc:
        typer.echo(f"pykraft: {' '.join(exc.format_message().split())}", err=True)
        return 1
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("", err=True)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly, as click does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
