"""Spark's Python daemon (`pyspark.daemon`, which forks every Python worker of a session) with pykraft's codecs
imported before it forks: each worker and each data-source planner then starts with them loaded instead of
importing them again (about 1.5 CPU seconds a worker: kio's message classes). Only pure-Python modules, no
numpy, pyarrow or pandas: those start threads when imported, and the daemon must not have threads when it forks
(pyspark.daemon says so). Set as `spark.python.daemon.module` by session.py."""

from __future__ import annotations

import pykraft.controller.controller  # the replay's state machine
import pykraft.records.control  # control records (kio's KRaft schemas)
import pykraft.records.group_records
import pykraft.records.metadata  # every metadata record class
import pykraft.records.metadata.json_view  # noqa: F401
from pyspark.daemon import manager

if __name__ == "__main__":
    manager()
