"""The data pipeline on Spark: a cluster's logs, snapshots and traces as Spark tables, the metadata image at any
offset, histories, audits and a report. The only package that imports Spark; only the CLI imports it.

`register(spark)` makes the data sources (`kafka-log`, `kafka-snapshot`) usable from any PySpark program;
`session()` starts a SparkSession the way pykraft needs it (loopback only, the venv's Python on the workers).
"""

from __future__ import annotations

from .session import JavaMissingError, register, session

__all__ = ["JavaMissingError", "register", "session"]
