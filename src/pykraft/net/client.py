"""The client side of the network layer: `Connection` (one pipelined connection, connection.py) and
`ConnectionPool` (one lazily opened connection per address with reconnect backoff, pool.py)."""

from pykraft.net.connection import Connection
from pykraft.net.pool import ConnectionPool

__all__ = ["Connection", "ConnectionPool"]
