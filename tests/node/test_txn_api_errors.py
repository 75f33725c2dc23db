"""The transaction requests' version rules (node/apis/txn_api.py): which versions are advertised, and
PRODUCER_FENCED as the INVALID_PRODUCER_EPOCH older clients know."""

from __future__ import annotations

from pykraft.node.apis.txn_api import _older_fenced
from pykraft.node.runtime.served_apis import TXN_APIS
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode as E


def test_transaction_version_2_versions_are_advertised_as_kafka_4_0_does():
    assert TXN_APIS[ApiKey.END_TXN] == (0, 5) and TXN_APIS[ApiKey.TXN_OFFSET_COMMIT] == (0, 5)
    assert TXN_APIS[ApiKey.ADD_PARTITIONS_TO_TXN] == (0, 5)


def test_producer_fenced_is_invalid_producer_epoch_below_the_version_that_knows_it():
    assert _older_fenced(E.PRODUCER_FENCED, 1, 2) is E.INVALID_PRODUCER_EPOCH
    assert _older_fenced(E.PRODUCER_FENCED, 2, 2) is E.PRODUCER_FENCED
    assert _older_fenced(E.PRODUCER_FENCED, 3, 4) is E.INVALID_PRODUCER_EPOCH  # InitProducerId v0-3
    assert _older_fenced(E.CONCURRENT_TRANSACTIONS, 0, 2) is E.CONCURRENT_TRANSACTIONS
