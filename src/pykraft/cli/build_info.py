"""Which build of pykraft is running: pure Python, or with the typed hot path compiled by mypyc.

`COMPILED_MODULES` is the one list of modules `make setup-compiled` compiles (setup.py reads it with `ast`, without
importing pykraft). Every module on it is also plain Python: where no C compiler was at hand the same source runs
interpreted, and this module reports which of the two was installed by looking for the extension files next to
the sources, without importing the modules themselves (so `pykraft --version` stays cheap).
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

# Kept only where a benchmark showed a gain (README, "The compiled build"). Pure, strictly typed modules only:
# no monkeypatching by tests, no dynamic attributes. Not yet raft/ (tried, issue 34): mypyc refuses exception
# classes based on AssertionError/RuntimeError (quorum_state, snapshot_writer) and breaks @runtime_checkable
# Protocols (log), dataclasses with ClassVar fields (voter_change) and Generic classes (purgatory) at import, and
# the tests' fakes subclass raft classes, which compiled classes refuse without mypyc_attr (mypy_extensions at run
# time). protocol/wire_check: its LiftingEdits subclasses list, which mypyc cannot compile. Tried again: raft's
# client, leader, voter_set, accumulator, listener, handlers.fetch, messages, timers and states compile and run
# (effect_runner does not: the node subclasses its EffectRunner), but benchmarks/quorum.py's CPU per linger-0 commit
# did not move (2,125 us over the four processes, against 2,094-2,250 without them): not kept. records/record_scan
# is not compiled: its numpy is loaded at first use from the `else` of an `if TYPE_CHECKING`, a branch mypy calls
# unreachable, which mypyc compiles to a RuntimeError at import (every broker crashed in the compiled build); its
# hot loops are numpy's anyway. `make setup-compiled` now imports every module of the list before it succeeds.
COMPILED_MODULES = (
    "pykraft.records.varint",
    "pykraft.records.errors",
    "pykraft.records.crc",
    "pykraft.records.batch",
    "pykraft.records.simple_scan",
    "pykraft.protocol.framing",
    "pykraft.protocol.frame_reader",
    "pykraft.protocol.produce_answer",
    "pykraft.protocol.raft_fetch",
    "pykraft.protocol.borrowed_records",
)

_PACKAGE_DIR = Path(__file__).parents[1]  # src/pykraft


def compiled_modules() -> list[str]:
    """The modules of COMPILED_MODULES that this installation has as C extensions (the ones Python imports)."""
    found = []
    for name in COMPILED_MODULES:
        stem = _PACKAGE_DIR.joinpath(*name.split(".")[1:])
        if any(stem.with_name(stem.name + suffix).is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            found.append(name)
    return found


def build_name() -> str:
    """'compiled' when any hot module is a C extension, else 'pure'."""
    return "compiled" if compiled_modules() else "pure"


def build_line() -> str:
    """What `pykraft --version` adds: the build and, for a compiled one, how many modules mypyc compiled."""
    compiled = compiled_modules()
    if not compiled:
        return "pure Python build"
    return f"compiled build: {len(compiled)} of {len(COMPILED_MODULES)} hot modules compiled by mypyc"


def build_fields() -> dict[str, object]:
    """The build in use, for a benchmark's JSON line."""
    return {"build": build_name(), "compiled_modules": len(compiled_modules())}
