"""`pykraft analyze` on small inputs against Spark's own floor, measured in the same run (benchmarks/pipeline.py
prints these lines; run alone: `.venv/bin/python benchmarks/analyze_speed.py [--quickstart DIR]`).

The floor: a bare Spark session counting one row (`pykraft.pipeline.session`, `spark.range(1).count()`, stop), in
a process of its own, as `pykraft analyze` runs in one: JVM start, session, first job. Timed three times around
the analyses (before, between, after) and the median taken, because the machine's load moves under the run.
The analyses, each through the CLI in a process of its own:
- the quickstart's directories (`pykraft quickstart --duration 20`, made here unless --quickstart names them);
- the same at an earlier offset (`--at-offset`, the middle of the metadata log);
- a simulator export (`pykraft sim sweep --scenario metadata_brokers --seeds 1 --export`).
Goal (issue 30): each within 5x the floor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 5.0
FLOOR = """
import sys, tempfile
from pykraft.pipeline import session
spark = session("local[2]", local_dir=tempfile.mkdtemp(prefix="pykraft-floor-"))
assert spark.range(1).count() == 1
spark.stop()
"""


def _run(args: list[str], timeout: int = 3600) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - started, result


def floor_seconds() -> float:
    seconds, result = _run([sys.executable, "-c", FLOOR])
    assert result.returncode == 0, result.stderr[-2000:]
    return seconds


def pykraft(*args: str) -> list[str]:
    return [sys.executable, "-m", "pykraft.cli.main", *args]


def analyze_seconds(inputs: Path, out: Path, *flags: str) -> float:
    seconds, result = _run(pykraft("analyze", str(inputs), "--out", str(out), *flags))
    assert result.returncode in (0, 1), result.stderr[-2000:]  # 1: an audit failed, the run itself worked
    return seconds


def quickstart(directory: Path) -> None:
    _, result = _run(pykraft("quickstart", "--dir", str(directory), "--reset", "--duration", "20"))
    assert result.returncode == 0, result.stdout[-2000:]


def sim_export(directory: Path) -> None:
    _, result = _run(pykraft("sim", "sweep", "--scenario", "metadata_brokers", "--seeds", "1", "--json", "--export",
                             str(directory)))
    assert result.returncode == 0, result.stderr[-2000:]


def middle_offset(out: Path) -> int:
    summary = json.loads((out / "summary.json").read_text())
    return summary["clusters"][0]["highWatermark"] // 2


def measure(scratch: Path, quickstart_dir: Path | None = None) -> dict[str, float]:
    qs = quickstart_dir or scratch / "quickstart"
    if quickstart_dir is None:
        quickstart(qs)
    sim_export(scratch / "sim")
    floors = [floor_seconds()]
    runs = {"quickstart": analyze_seconds(qs, scratch / "out-quickstart")}
    floors.append(floor_seconds())
    runs["quickstart --at-offset"] = analyze_seconds(qs, scratch / "out-at-offset", "--at-offset",
                                                      str(middle_offset(scratch / "out-quickstart")))
    runs["simulator export"] = analyze_seconds(scratch / "sim", scratch / "out-sim")
    floors.append(floor_seconds())
    return {"floor": statistics.median(floors), "floors": floors, **runs}


def report(timings: dict[str, float]) -> list[str]:
    floor = timings["floor"]
    lines = [f"analyze on small inputs, against a bare Spark session counting one row in the same run: floor "
             f"{floor:.1f} s (median of {', '.join(f'{f:.1f}' for f in timings['floors'])})"]
    for name, seconds in timings.items():
        if name not in ("floor", "floors"):
            lines.append(f"    analyze {name}: {seconds:6.1f} s = {seconds / floor:.2f}x the floor (goal <= {GOAL}x)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quickstart", type=Path, default=None, help="a quickstart's directory to analyze")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-analyze-") as scratch:
        print("\n".join(report(measure(Path(scratch), args.quickstart))))


if __name__ == "__main__":
    main()
