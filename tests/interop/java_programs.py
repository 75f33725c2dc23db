"""Kafka's own Java client and parser as the judge (the `interop_java` tier).

kafka-clients 3.9.1 (with slf4j-api and the compression jars) comes from the PyPI wheel
`shigawire-apache-flink-libraries` (`pyflink/lib/`), installed by the `interop` extra that `make setup` installs.
The check programs are the Java sources beside this module (`java/*.java`): compiled once per test session with
the JDK's `javac`, each prints one JSON line per check (`Checks.java`): {"check": name, "ok": bool, "detail": ...}.
A test asserts on those lines, so a check that fails names itself and Kafka's exception.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

JAVA_SOURCES = Path(__file__).parent / "java"
WHEEL = "shigawire-apache-flink-libraries"
JARS = ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar")


class JavaToolError(Exception):
    """The JDK or the Kafka jars are missing, or a check program did not compile or run."""


def kafka_jars() -> list[Path]:
    """The jars of Kafka's Java client, from the installed wheel."""
    try:
        files = metadata.files(WHEEL) or []
    except metadata.PackageNotFoundError:
        raise JavaToolError(f"{WHEEL} is not installed: run `make setup` (the `interop` extra)") from None
    found = {Path(str(f)).name: Path(str(f.locate())) for f in files if str(f).endswith(".jar")}
    missing = [name for name in JARS if name not in found]
    if missing:
        raise JavaToolError(f"{WHEEL} lacks {', '.join(missing)}")
    return [found[name] for name in JARS]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise JavaToolError(f"`{name}` not found: the interop tier needs a JDK 17 on PATH")
    return path


@dataclass(frozen=True)
class CheckResult:
    check: str
    ok: bool
    detail: object


class JavaPrograms:
    """The compiled check programs; `run(main_class, *args)` returns each check's result by name."""

    def __init__(self, build_dir: Path) -> None:
        self.classpath = ":".join(str(p) for p in [build_dir, *kafka_jars()])
        sources = sorted(str(p) for p in JAVA_SOURCES.glob("*.java"))
        compiled = subprocess.run([_tool("javac"), "-nowarn", "-d", str(build_dir), "-cp", self.classpath, *sources],
                                  capture_output=True, text=True, timeout=300)
        if compiled.returncode != 0:
            raise JavaToolError(f"javac failed:\n{compiled.stderr}")

    def run(self, main_class: str, *args: str, timeout: float = 300) -> dict[str, CheckResult]:
        done = subprocess.run([_tool("java"), "-cp", self.classpath, main_class, *args],
                              capture_output=True, text=True, timeout=timeout)
        results = {}
        for line in done.stdout.splitlines():
            if line.startswith("{\"check\":"):
                parsed = json.loads(line)
                results[parsed["check"]] = CheckResult(parsed["check"], parsed["ok"], parsed["detail"])
        if done.returncode != 0:
            raise JavaToolError(f"{main_class} exited {done.returncode}:\n{done.stderr[-4000:]}")
        return results


def failures(results: dict[str, CheckResult], names: list[str] | None = None) -> dict[str, object]:
    """The failed checks among `names` (all when None), with their details; a name with no result is a failure."""
    wanted = list(results) if names is None else names
    return {name: (results[name].detail if name in results else "no result")
            for name in wanted if name not in results or not results[name].ok}
