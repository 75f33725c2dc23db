"""What `pykraft consumer-groups` prints, against Kafka's printf layouts written out by hand (ConsumerGroupCommand,
GroupOffsetsResetter): the column widths, the "-" for missing values, the lag, the notices and their streams."""

from __future__ import annotations

from pykraft.cli import consumer_groups_output as out
from pykraft.cli.consumer_groups_cmd import check
from pykraft.cli.kafka_args import UsageError, parse

import pytest


def test_the_offsets_table_is_kafkas_and_the_lag_is_log_end_minus_committed():
    rows = [out.OffsetRow("orders-app", "orders", 0, 10, 25, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
            out.OffsetRow("orders-app", "orders", 1, None, 7, "-", "-", "-")]
    assert rows[0].lag == 15 and rows[1].lag is None
    assert out.offsets_table(rows).split("\n") == [
        "",
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     "
        "HOST            CLIENT-ID",
        "orders-app      orders          0          10              25              15              consumer-1-abc  "
        "/127.0.0.1      consumer-1",
        "orders-app      orders          1          -               7               -               -               "
        "-               -",
    ]


def test_long_names_widen_their_columns_and_verbose_adds_the_leader_epoch():
    rows = [out.OffsetRow("a-rather-long-group-name", "t", 3, 1, 1, "m" * 20, "/10.0.0.1", "c", leader_epoch=4)]
    header, row = out.offsets_table(rows, verbose=True).split("\n")[1:]
    assert header.startswith("GROUP" + " " * 20 + "TOPIC" + " " * 11 + "PARTITION  LEADER-EPOCH    CURRENT-OFFSET")
    assert row == ("a-rather-long-group-name t               3          4               1               1"
                   "               0               " + "m" * 20 + " /10.0.0.1       c")


def test_a_committed_offset_of_minus_one_has_no_lag():
    assert out.OffsetRow("g", "t", 0, -1, 5, "-", "-", "-").lag is None


def test_members_table_with_and_without_group_instance_ids_and_verbose():
    plain = out.members_table("g", [out.MemberRow("g", "m1", "", "/h", "c1", (("t", 1), ("t", 0), ("u", 2)))])
    assert plain.split("\n") == [
        "", "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     ",
        "g               m1              /h              c1              3               "]
    static = out.members_table("g", [out.MemberRow("g", "m1", "inst-1", "/h", "c1", ())], verbose=True)
    header, row = static.split("\n")[1:]
    assert header.startswith("GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST")
    assert header.endswith("#PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   ")
    assert row.endswith("0               -               -                    -               -                   ")
    assert out.assignment_text([("u", 2), ("t", 1), ("t", 0)]) == "t:0,1;u:2"


def test_state_table_and_coordinator_text():
    coordinator = out.coordinator_text("127.0.0.1", 9092, 2)
    assert coordinator == "127.0.0.1:9092  (2)"
    assert out.state_table("g", coordinator, "range", "Stable", 2).split("\n") == [
        "", "GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS",
        "g               127.0.0.1:9092  (2)       range                Stable               2"]
    assert out.state_table("g", coordinator, "", "Empty", 0).split("\n")[2].split()[3] == "-"


def test_state_messages_and_their_streams():
    assert out.state_message("g", None, None) == ("\nError: The consumer group 'g' does not exist.", None, False)
    assert out.state_message("g", "Dead", 0) == ("\nError: Consumer group 'g' does not exist.", None, False)
    assert out.state_message("g", "Empty", 2) == (None, "\nConsumer group 'g' has no active members.", True)
    assert out.state_message("g", "PreparingRebalance", 1)[1] == "\nWarning: Consumer group 'g' is rebalancing."
    assert out.state_message("g", "Stable", 0) == (None, None, False)


def test_list_tables_reset_table_csv_and_delete_offsets_table():
    assert out.listing_table([("g1", "classic", "Stable")], True, True) == [
        "GROUP                     TYPE                 STATE               ",
        "g1                        classic              Stable              "]
    plan = {"g1": {("orders", 1): 7, ("orders", 0): 5}}
    assert out.reset_table(plan) == ("\nGROUP           TOPIC           PARTITION  NEW-OFFSET\n"
                                     "g1              orders          0          5\n"
                                     "g1              orders          1          7\n")
    assert out.reset_table({"g1": {}}) == "\nGROUP           TOPIC           PARTITION  NEW-OFFSET\n"
    assert out.export_csv(plan, True) == "orders,0,5\norders,1,7\n"
    assert out.export_csv(plan, False) == "g1,orders,0,5\ng1,orders,1,7\n"
    table = out.delete_offsets_table({("t", 0): None, ("t", -1): "boom"})
    assert table == ("\nTOPIC           PARTITION  STATUS         \nt               -          Error: boom    \n"
                     "t               0          Successful     \n")


@pytest.mark.parametrize("line, message", [
    (["--list"], 'Missing required argument "[bootstrap-server]"'),
    (["--bootstrap-server", "h:1"], out.ONE_ACTION),
    (["--bootstrap-server", "h:1", "--list", "--describe", "--all-groups"], out.ONE_ACTION),
    (["--bootstrap-server", "h:1", "--describe"], "Option [describe] takes one of these options: [group], "
                                                  "[all-groups]"),
    (["--bootstrap-server", "h:1", "--describe", "--group", "g", "--members", "--state"],
     "Option [describe] takes at most one of these options: [members], [offsets], [state]"),
    (["--bootstrap-server", "h:1", "--describe", "--group", "g", "--state", "stable"],
     "Option [describe] does not take a value for [state]"),
    (["--bootstrap-server", "h:1", "--list", "--members"],
     "Option(s) [members] are unavailable given other options on the command line"),
    (["--bootstrap-server", "h:1", "--delete", "--group", "g", "--topic", "t"],
     "The consumer does not support topic-specific offset deletion from a consumer group."),
    (["--bootstrap-server", "h:1", "--delete-offsets", "--group", "g"],
     "Option [delete-offsets] takes the following options: [group], [topic]"),
    (["--bootstrap-server", "h:1", "--reset-offsets", "--group", "g", "--dry-run", "--execute"],
     "Option [reset-offsets] only accepts one of [execute] and [dry-run]"),
    (["--bootstrap-server", "h:1", "--reset-offsets", "--group", "g", "--to-earliest", "--to-latest", "--dry-run"],
     'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
    (["--bootstrap-server", "h:1", "--list", "--group", "g"], 'Option "[group]" can\'t be used with option "[list]"'),
])
def test_kafkas_argument_checks_in_kafkas_words(line, message):
    with pytest.raises(UsageError) as raised:
        from pykraft.cli.consumer_groups_cmd import FLAGS

        check(parse(FLAGS, line))
    assert str(raised.value) == message


def test_a_consumer_groups_epochs_and_target_assignment_in_the_verbose_tables():
    """KIP-848 groups fill the columns a classic group leaves at "-": the member's epoch and assignment, the
    group's target assignment epoch and the member's target."""
    row = out.MemberRow("g", "m1", "", "/h", "c1", (("t", 0),), current_epoch=7, target_epoch=8,
                        target_assignment=(("t", 0), ("t", 1)))
    header, line = out.members_table("g", [row], verbose=True).split("\n")[1:]
    assert line.split() == ["g", "m1", "/h", "c1", "1", "7", "t:0", "8", "t:0,1"]
    state = out.state_table("g", "127.0.0.1:9092  (2)", "uniform", "Reconciling", 1, verbose=True, epochs=(9, 8))
    assert state.split("\n")[2].split() == ["g", "127.0.0.1:9092", "(2)", "uniform", "Reconciling", "9", "8", "1"]
