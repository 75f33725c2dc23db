"""`pykraft analyze DIR... --out OUT`: the Spark pipeline over node directories (pykraft/pipeline/run.py).

Exit 0 when every audit passes, 1 when one fails (one line per failing audit), 2 on bad input (no log found,
unreadable file, no Java, pyspark not installed, executors that cannot import pykraft) with one line.
Spark is imported only when this command runs."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import typer

BAD_INPUT = 2


def parse_time_ms(text: str) -> int:
    """ISO-8601 (a time without zone is UTC) -> epoch milliseconds."""
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(f"Invalid value for --at-time: not an ISO-8601 time: {text!r}") from None  # a usage error: 2
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp() * 1000)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"pykraft analyze: {message}", err=True)
    return typer.Exit(BAD_INPUT)


def run_analyze(dirs: list[Path], out: Path, master: str, at_offset: int | None, at_time: str | None,
                as_json: bool) -> int:
    if not dirs:
        raise _fail("give at least one directory (or --stream --bootstrap-controller H:P)")
    if at_offset is not None and at_time is not None:
        raise _fail("give --at-offset or --at-time, not both")
    at_time_ms = parse_time_ms(at_time) if at_time else None
    try:
        from pykraft.pipeline import JavaMissingError, session
        from pykraft.pipeline.layout import LayoutError, find_files
        from pykraft.pipeline.run import AnalyzeOptions, analyze, failing
    except ImportError as exc:
        raise _fail(f"the pipeline needs the `pipeline` extra (pip install 'pykraft[pipeline]'): {exc}") from None
    roots = [str(d) for d in dirs]
    # Spark's scratch space (shuffle files, its log4j settings) lives outside OUT and goes with the session.
    scratch = tempfile.mkdtemp(prefix="pykraft-spark-")
    try:
        try:
            find_files(roots, snapshots=False)
            os.makedirs(out, exist_ok=True)
            spark = session(master, local_dir=scratch)
        except (LayoutError, JavaMissingError, OSError) as exc:
            raise _fail(str(exc)) from None
        try:
            summary = analyze(spark, AnalyzeOptions(roots, str(out), at_offset, at_time_ms))
        except LayoutError as exc:
            raise _fail(str(exc)) from None
        except Exception as exc:  # a Spark job failure: name it in one line, never a JVM stack
            raise _fail(_spark_failure(exc)) from None
        finally:
            spark.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _print_verdicts(summary, failing(summary), as_json)


def run_stream(bootstrap: str | None, out: Path, master: str, checkpoint: Path | None, available_now: bool) -> int:
    """`--stream`: the kraft source into OUT/stream_records until Ctrl-C (or, with --available-now, until every
    record committed when it started is written)."""
    if not bootstrap:
        raise _fail("--stream needs --bootstrap-controller H:P")
    try:
        from pykraft.pipeline import JavaMissingError, session
        from pykraft.pipeline.stream import StreamSourceError, quorum_point
    except ImportError as exc:
        raise _fail(f"the pipeline needs the `pipeline` extra (pip install 'pykraft[pipeline]'): {exc}") from None
    scratch = tempfile.mkdtemp(prefix="pykraft-spark-")
    try:
        point = quorum_point(bootstrap)  # an unreachable quorum is bad input, said before Spark starts
        os.makedirs(out, exist_ok=True)
        spark = session(master, local_dir=scratch)
    except (StreamSourceError, JavaMissingError, OSError) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise _fail(str(exc)) from None
    print(f"streaming cluster {point.cluster_id} (leader {point.leader_id}, HWM {point.high_watermark}) into "
          f"{out / 'stream_records'}", file=sys.stderr)
    trigger = {"availableNow": True} if available_now else {"processingTime": "2 seconds"}
    try:
        query = (spark.readStream.format("kraft").option("bootstrap", bootstrap).load().writeStream
                 .format("parquet").option("checkpointLocation", str(checkpoint or out / "_checkpoint"))
                 .trigger(**trigger).start(str(out / "stream_records")))
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            query.stop()
        if query.exception() is not None:
            raise _fail(_spark_failure(query.exception()))
        rows = spark.read.parquet(str(out / "stream_records")).count()
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    typer.echo(f"{rows} records in {out / 'stream_records'}")
    return 0


def _spark_failure(exc: Exception) -> str:
    text = str(exc)
    if "No module named 'pykraft'" in text:
        return ("the Spark executors cannot import pykraft: install it in the executors' Python (same venv, "
                "spark.pyspark.python) or ship it with --py-files")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"Spark job failed: {lines[0] if lines else type(exc).__name__}"


def _print_verdicts(summary: dict, failures: list[str], as_json: bool) -> int:
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True, default=str))
    else:
        for name, audit in sorted(summary["audits"].items()):
            typer.echo(f"{name:18} {audit['verdict'].upper():5} ({audit['offending']} offending rows)")
        typer.echo(f"report: {summary['report']}")
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0
