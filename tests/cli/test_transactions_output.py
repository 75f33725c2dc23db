"""`pykraft transactions` tables as Kafka's ToolsUtils.prettyPrintTable prints them."""

from pykraft.cli.transactions_cmd import LIST_HEADERS, pretty_table


def test_columns_padded_to_the_widest_cell_each_followed_by_a_tab():
    lines = pretty_table(LIST_HEADERS, [["a-long-transactional-id", "1", "42", "Ongoing"]])
    assert lines == ["TransactionalId        \tCoordinator\tProducerId\tTransactionState\t",
                     "a-long-transactional-id\t1          \t42        \tOngoing         \t"]


def test_an_empty_table_is_the_header_line():
    assert pretty_table(["A", "BB"], []) == ["A\tBB\t"]
