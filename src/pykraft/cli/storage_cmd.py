"""`pykraft storage format|info|random-uuid|version-mapping|feature-dependencies`: Kafka's kafka-storage.sh
(reference §6.2).

Thin: flags are turned into a `FormatRequest` from the node configuration, and every refusal becomes one
`pykraft storage: ...` line on stderr with exit code 1 (typer's own usage errors exit 2). The heavy imports
happen inside the commands so that `pykraft --help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

storage_app = typer.Typer(
    name="storage",
    help="Format and inspect the log directories of a node (Kafka's kafka-storage.sh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PREFIX = "pykraft storage: "


def _fail(*messages: str) -> typer.Exit:
    for message in messages:
        typer.echo(PREFIX + message.replace("\n", " "), err=True)
    return typer.Exit(1)


def _load(config: Path):  # -> NodeConfig
    from pykraft.node.config.node_config import ConfigError, load_config

    try:
        return load_config(config)
    except ConfigError as exc:
        raise _fail(*exc.problems) from None


ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="The node's server.properties file.")]


@storage_app.command("format")
def format_command(
    config: ConfigOption,
    cluster_id: Annotated[
        str, typer.Option("--cluster-id", "-t", help="The cluster id (pykraft storage random-uuid).")
    ],
    standalone: Annotated[
        bool, typer.Option("--standalone", "-s", help="This controller is the only initial voter (dynamic quorum).")
    ] = False,
    initial_controllers: Annotated[
        str | None,
        typer.Option("--initial-controllers", "-I", help="The initial voters: id@host:port:directoryId,..."),
    ] = None,
    no_initial_controllers: Annotated[
        bool, typer.Option("--no-initial-controllers", "-N", help="Join a dynamic quorum later, as an observer.")
    ] = False,
    ignore_formatted: Annotated[
        bool, typer.Option("--ignore-formatted", "-g", help="Skip directories that are already formatted.")
    ] = False,
    add_scram: Annotated[
        list[str] | None, typer.Option(
            "--add-scram", "-S", help="A SCRAM credential for the bootstrap metadata, e.g. "
                                      "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable).")
    ] = None,
    release_version: Annotated[
        str | None, typer.Option("--release-version", "-r", help="metadata.version, e.g. 4.1-IV1 or 3.9.")
    ] = None,
    feature: Annotated[
        list[str] | None, typer.Option("--feature", "-f", help="A feature level name=level (repeatable).")
    ] = None,
) -> None:
    """Write meta.properties, bootstrap.checkpoint and, for a dynamic quorum, the bootstrap snapshot."""
    from pykraft.storage import StorageError
    from pykraft.storage.format import FormatError, FormatRequest, QuorumFlag, format_directories

    flags = (("--standalone", standalone), ("--initial-controllers", initial_controllers is not None),
             ("--no-initial-controllers", no_initial_controllers))
    given = [flag for flag, on in flags if on]
    if len(given) > 1:
        raise _fail(f"only one of --standalone, --initial-controllers and --no-initial-controllers may be given, "
                    f"not {' and '.join(given)}")
    flag = QuorumFlag(given[0]) if given else QuorumFlag.NONE
    node = _load(config)
    request = FormatRequest(
        cluster_id=cluster_id.strip(),
        node_id=node.node_id,
        is_controller=node.is_controller,
        log_dirs=node.log_dirs,
        metadata_log_dir=node.metadata_log_dir,
        has_static_voters=bool(node.quorum_voters),
        controller_listener_name=node.controller_listener_name,
        controller_endpoints=node.advertised_controller_endpoints(),  # empty on a broker-only node
        quorum_flag=flag,
        initial_controllers=initial_controllers,
        release_version=release_version,
        features=tuple(feature or ()),
        ignore_formatted=ignore_formatted,
        add_scram=tuple(add_scram or ()),
    )
    try:
        format_directories(request, typer.echo)
    except FormatError as exc:
        raise _fail(str(exc)) from None
    except (StorageError, OSError) as exc:
        raise _fail(f"cannot format: {_os_message(exc)}") from None


@storage_app.command("info")
def info_command(config: ConfigOption) -> None:
    """Print what each log directory of the node holds; exit 1 if any is missing or not formatted."""
    from pykraft.storage.format import describe_directories

    node = _load(config)
    lines, code = describe_directories(sorted(set(node.log_dirs) | {node.metadata_log_dir}))
    for line in lines:
        typer.echo(line)
    raise typer.Exit(code)


@storage_app.command("random-uuid")
def random_uuid_command() -> None:
    """Print a random Kafka uuid, for --cluster-id."""
    import random

    from pykraft.records.uuids import random_kafka_uuid, uuid_to_kafka_str

    typer.echo(uuid_to_kafka_str(random_kafka_uuid(random.SystemRandom())))


def _os_message(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


@storage_app.command("version-mapping")
def version_mapping(
    release_version: Annotated[str | None, typer.Option(
        "--release-version", "-r", help="The release whose feature levels to print (default: the latest).")] = None,
) -> None:
    """The feature levels a release finalizes (Kafka's kafka-storage version-mapping)."""
    from .feature_versions import FeatureVersionError, version_mapping_lines

    try:
        lines = version_mapping_lines(release_version)
    except FeatureVersionError as exc:
        raise _fail(str(exc)) from None
    for line in lines:
        typer.echo(line)


@storage_app.command("feature-dependencies")
def feature_dependencies(
    feature: Annotated[list[str] | None, typer.Option(
        "--feature", "-f", help="A feature level, e.g. kraft.version=1 (repeatable).")] = None,
) -> None:
    """The features a feature level depends on (Kafka's kafka-storage feature-dependencies)."""
    from .feature_versions import FeatureVersionError, feature_dependencies_lines

    try:
        lines = feature_dependencies_lines(feature or [])
    except FeatureVersionError as exc:
        raise _fail(str(exc)) from None
    for line in lines:
        typer.echo(line)
