"""The throttle time every response of a pykraft node carries: zero, since it never throttles a client (Kafka's
quotas are not implemented). One constant for every response builder; kio's field type is `i32Timedelta`, which
is a validated `datetime.timedelta`."""

from __future__ import annotations

import datetime

from kio.static.primitive import i32Timedelta

ZERO_THROTTLE: i32Timedelta = i32Timedelta.parse(datetime.timedelta(0))
