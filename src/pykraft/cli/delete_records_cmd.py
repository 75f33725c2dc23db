"""`pykraft delete-records`: Kafka's kafka-delete-records.sh (tools/.../DeleteRecordsCommand.java).

    pykraft delete-records --bootstrap-server H:P --offset-json-file F [--command-config F]

F is Kafka's JSON: {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1} (offset -1: the
high watermark). Prints "Executing records delete operation", "Records delete operation completed:" and one line
per partition, `partition: foo-1<TAB>low_watermark: N` or `partition: foo-1<TAB>error: <Kafka's exception>: <its
message>`, in Kafka's order (log_tools_output.py); a refused partition does not change the exit status (0), as in
Kafka. A bad file, a missing flag or an unreachable cluster: one line on stderr, exit 1.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from pykraft.admin.errors import AdminError

from . import log_tools_output as out
from .metadata_quorum_cmd import Connection, ToolFailure, invoke, run_admin
from .topics_cmd import CommandConfig

PROG = "pykraft delete-records"

app = typer.Typer(name="delete-records", add_completion=False, pretty_exceptions_enable=False,
                  help="Delete records of the given partitions down to the specified offset.")


def run(args: Sequence[str]) -> int:
    return invoke(app, args, PROG)


def parse_offsets(text: str) -> dict[tuple[str, int], int]:
    """Kafka's `parseOffsetJsonStringWithoutDedup` plus its duplicate check. ToolFailure with Kafka's words."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ToolFailure("The input string is not a valid JSON") from None
    if not isinstance(document, dict):
        raise ToolFailure("The input string is not a valid JSON object")
    version = document.get("version", 1)
    if version != 1:
        raise ToolFailure(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise ToolFailure("Missing partitions field")
    if not isinstance(document["partitions"], list):
        raise ToolFailure("Expected JSON array for field `partitions`")
    found: dict[tuple[str, int], list[int]] = {}
    for entry in document["partitions"]:
        topic = _field(entry, "topic", str)
        partition = _field(entry, "partition", int)
        offset = _field(entry, "offset", int)
        found.setdefault((topic, partition), []).append(offset)
    duplicates = [f"{t}-{p}" for (t, p), offsets in found.items() if len(offsets) > 1]
    if duplicates:
        raise ToolFailure(f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}")
    return {key: offsets[0] for key, offsets in found.items()}


def _field(entry: Any, name: str, kind: type) -> Any:
    if not isinstance(entry, dict) or name not in entry:
        raise ToolFailure(f"No such field exists: `{name}`")
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ToolFailure(f"Field `{name}` is not a JSON {'string' if kind is str else 'number'}: {value!r}")
    return value


@app.command()
def delete_records(
    bootstrap_server: Annotated[str | None, typer.Option("--bootstrap-server",
                                                         help="REQUIRED: The server to connect to.")] = None,
    offset_json_file: Annotated[Path | None, typer.Option(
        "--offset-json-file", help='REQUIRED: The JSON file with offset per partition, e.g. {"partitions": '
                                   '[{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}')] = None,
    command_config: CommandConfig = None,
) -> None:
    """Delete records of the given partitions down to the specified offset."""
    for value, flag in ((bootstrap_server, "bootstrap-server"), (offset_json_file, "offset-json-file")):
        if value is None:
            raise ToolFailure(f'Missing required argument "[{flag}]"')
    try:
        text = Path(offset_json_file).read_text()  # type: ignore[arg-type]
    except OSError as exc:
        raise ToolFailure(f"{offset_json_file}: {exc.strerror or exc}") from None
    offsets = parse_offsets(text)

    async def operation(client: Any) -> Any:
        from pykraft.admin.log_admin import delete_records as delete

        return await delete(client, offsets)

    results = run_admin(Connection(None, bootstrap_server, command_config), operation)
    shown = {tp: (r.code if isinstance(r, AdminError) else r) for tp, r in results.items()}
    for line in out.delete_records_lines(shown):
        typer.echo(line)
