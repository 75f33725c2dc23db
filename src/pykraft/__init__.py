"""pykraft: Apache Kafka's KRaft metadata quorum, its controller and brokers, in Python."""

__version__ = "0.1.0"  # kept equal to pyproject.toml's; the installed distribution's version is the one printed
