"""Hypothesis setup shared by the protocol tests."""

from hypothesis import strategies as st
from kio.static.primitive import Records

# kio registers strategies for its own phantom types but not for Records (opaque record-batch bytes).
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
