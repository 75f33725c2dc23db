"""kio schema modules imported when first used, for code that answers RPCs a node may never receive.

Each kio schema module defines frozen slotted dataclasses, whose generated methods are compiled at import: the
controller's answers to brokers, topic, config, feature and election requests (~20 version packages, each
importing its request and its response module) cost an idle controller-only node ~1 MiB of RSS
(benchmarks/quorum.py) for RPCs it may never receive. `schema_module("kio.schema.create_topics.v7.response")`
stands in for `from kio.schema.create_topics.v7 import response` and imports it at the first attribute read
(`module.CreateTopicsResponse`); an import error surfaces there, and tests/protocol/test_lazy_schema.py loads
every module the code names this way so that a bad path fails in CI, not in front of a peer.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

NAMED: list[str] = []
"""Every module a LazySchemaModule was made for (tests import them all)."""


class LazySchemaModule:
    """A module that is imported on first attribute access (then only a dict lookup away)."""

    __slots__ = ("name", "_module")

    def __init__(self, name: str) -> None:
        self.name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:  # only for names the proxy itself lacks
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self.name)
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy {self.name}{'' if self._module is None else ' (loaded)'}>"


def schema_module(name: str) -> Any:
    """A stand-in for the kio module `name` (e.g. "kio.schema.create_topics.v7.response"); typed Any, like the
    classes the code reads from it."""
    NAMED.append(name)
    return LazySchemaModule(name)
