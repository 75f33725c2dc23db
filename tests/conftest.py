"""The test tiers: the slow folders and modules get their marker here, in one table, never test by test.

`make test` runs every tier (as it always did); `make test-fast` deselects the slow ones, for the quick check of a
change to the pure core (raft, controller, broker, storage, records, protocol basics, node hosts, sim scenarios).
The markers are declared (strict) in pyproject.toml; `spark` and `standalone` stay as module-level pytestmarks in
tests/pipeline, where they were."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import settings

# Hypothesis's default per-example deadline (200 ms) is a timing threshold in a pass/fail test: on a loaded two-core
# machine the first example of a test (imports, kio schema loading) took 318-486 ms and failed the run for the
# machine's speed, not the code's. Every test runs without it; the examples and shrinking are unchanged.
settings.register_profile("pykraft", deadline=None)
settings.load_profile("pykraft")

# Hypothesis imports its optimiser lazily, from deep inside a test's stack, and pytest's assertion rewriter (which
# rewrites a plugin's modules) then parses it there: CPython 3.11.7 fails that parse with "SystemError: AST
# constructor recursion depth mismatch" (fixed in 3.11.8), failing whichever test came first. Imported here, at
# the top of the stack, it is parsed once and cached.
import hypothesis.internal.conjecture.optimiser  # noqa: E402, F401

TESTS = pathlib.Path(__file__).parent
# marker -> folders ("name/") and modules (relative to tests/) it applies to.
TIERS: dict[str, tuple[str, ...]] = {
    # Real `pykraft server start` processes, several nodes talking TCP on 127.0.0.1 (generous liveness waits), or
    # the console script started with Spark on its path.
    "e2e": (
        "e2e/",
        "pipeline/test_cli.py",
        "admin/test_end_to_end.py",
        "cli/test_features_live.py",
        "node/test_cluster.py",
        "node/test_config_refusals.py",
        "node/test_refused_start.py",
        "node/test_server_cmd.py",
        "node/test_stop_faults.py",
    ),
    # The pipeline over real clusters it starts itself (produce histories, planted faults, SIGKILLed Spark drivers):
    # minutes each, so `make test` leaves them to `make test-pipeline-clusters`.
    "pipeline_clusters": (
        "pipeline/test_real_cluster.py",
        "pipeline/test_stream_kill.py",
        "pipeline/test_sim_analyze.py",
    ),
    # Kafka's own Java client and parser (kafka-clients 3.9.1 from the interop extra, a JDK) against real processes.
    "interop_java": ("interop/",),
    # Many seeded whole-cluster simulations: the CI sweeps (on two worker processes) and every scenario's seeds.
    "sim_sweep": (
        "sim/test_sim_sweep_ci.py",
        "sim/test_metadata_sweep_ci.py",
        "sim/test_reassign_sweep.py",
        "sim/test_sim_targeted.py",
        "sim/test_sim_scenarios.py",
        "sim/test_sim_runs.py",
        "sim/test_data_plane_sim.py",
        "sim/test_data_sweep_ci.py",
        "sim/test_consumer_group_sweep.py",
    ),
    # Property and fuzz runs over every message schema and version, and the file-log differential runs.
    "exhaustive": (
        "protocol/test_wire_check.py",
        "protocol/test_fuzz.py",
        "protocol/test_codec.py",
        "protocol/test_error_responses.py",
        "records/test_metadata_roundtrip.py",
        "records/test_metadata_interop.py",
        "records/test_metadata_json.py",
        "records/test_metadata_fuzz.py",
        "node/test_protocol_fuzz.py",
        "node/test_sasl_fuzz.py",
        "node/test_authz_shapes.py",
        "storage/test_log_differential.py",
    ),
}


def tiers_of(relative: str) -> list[str]:
    return [marker for marker, places in TIERS.items()
            if any(relative == place or (place.endswith("/") and relative.startswith(place)) for place in places)]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        relative = item.path.relative_to(TESTS).as_posix()
        for marker in tiers_of(relative):
            item.add_marker(getattr(pytest.mark, marker))


def _no_flush(fd: int) -> None:
    del fd


@pytest.fixture(autouse=True)
def _kernel_flush_skipped_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process test cannot observe a flush to the platter (no power is cut here: the crash tests cut files at
    byte positions, the simulator's disk models what a flush makes durable), yet the fsyncs of storage and cleaner
    tests (about 23,000 in the fast tier, 3-4 ms each on this machine) were a third of `make test-fast`'s wall time.
    So in this process they return at once; every call site still runs, in its order and on its thread, and a test
    that counts or gates flushes patches them after this. Real nodes (e2e, interop, the CLI's processes) flush."""
    from pykraft.storage import files

    monkeypatch.setattr("os.fsync", _no_flush)
    monkeypatch.setattr("os.fdatasync", _no_flush)
    monkeypatch.setattr(files, "_datasync", _no_flush)
