"""`--version`: pykraft's own version (the installed distribution's), as Kafka's tools print Kafka's, and which build
is running (pure Python, or the hot path compiled by mypyc: build_info.py)."""

from __future__ import annotations


def version_line() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from pykraft.cli.build_info import build_line

    try:
        number = version("pykraft")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from pykraft import __version__ as number
    return f"pykraft {number} ({build_line()})"
