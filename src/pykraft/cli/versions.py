"""`--version`: pykraft's own version (the installed distribution's), as Kafka's tools print Kafka's."""

from __future__ import annotations


def version_line() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"pykraft {version('pykraft')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        from pykraft import __version__

        return f"pykraft {__version__}"
