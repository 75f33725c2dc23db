"""One Spark session for every pipeline test (its ~25 s of warm-up is paid once): local[2], no UI, two shuffle
partitions, its scratch space under the test's tmp path. The session is pykraft's own (pipeline.session)."""

from __future__ import annotations

import pytest

from pykraft.pipeline import session


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    s = session("local[2]", app_name="pykraft-tests", local_dir=str(tmp_path_factory.mktemp("spark-local")),
                extra={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                       "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse"))})
    yield s
    s.stop()
