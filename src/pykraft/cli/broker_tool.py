"""What the tools built on `BrokerClient` share: reading their client properties (`--command-config`,
`--producer.config`, `--consumer.config`, `--property`-style `key=value` lists), building the client, running one
asynchronous operation with it, and turning its failures into the tool's one line (`ToolError`).

While no bootstrap server answers and more than a few seconds of the deadline remain, the client's wait notice is
printed once on stderr (`<prog>: waiting up to N s for a bootstrap server to answer (...)`), so a command pointed
at a dead cluster says what it waits for; the deadline is the tool's --timeout where it has one, else the client
properties' default.api.timeout.ms.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.connect import SettingsError, make_broker_client, read_command_config
from pykraft.admin.errors import AdminClientError

from .kafka_args import ToolError, UsageError

T = TypeVar("T")


def read_properties(path: str | None) -> dict[str, str]:
    """A properties file, or {} without one; a missing or unreadable file is a usage problem."""
    try:
        return read_command_config(Path(path) if path else None)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None


def key_values(items: Iterable[str], what: str) -> dict[str, str]:
    """`key=value` words (Kafka's --property, --producer-property, --consumer-property)."""
    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"Invalid {what} '{item}': expected key=value")
        found[key.strip()] = value.strip()
    return found


def run_with_client(prog: str, bootstrap: str | None, props: Mapping[str, str],
                    operation: Callable[[BrokerClient], Awaitable[T]], failure: Callable[[str], ToolError], *,
                    deadline_ms: int | None = None, client_id: str | None = None) -> T:
    """Build the client, run `operation` to completion, close the client; a client failure is `failure(text)`."""
    def notice(text: str) -> None:
        print(f"{prog}: {text}", file=sys.stderr, flush=True)

    try:
        client = make_broker_client(bootstrap, props, deadline_ms=deadline_ms, on_wait=notice, client_id=client_id)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None

    async def go() -> T:
        async with client:
            return await operation(client)

    try:
        return asyncio.run(go())
    except (AdminClientError, SettingsError) as exc:
        raise failure(" ".join(str(exc).split())) from None
