"""Where the log consumer's oldest unapplied message may be (stores/runlog.py): the rule
behind ``applied_through`` (ban sweeps, season freezes) and the end of a recovery."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rankd.stores.runlog import unapplied_from


def test_waiting_messages_are_looked_for_past_the_ack_floor() -> None:
    assert unapplied_from(pending=3, ack_pending=0, floor=10, delivered=10, last=13) == 11
    assert unapplied_from(pending=0, ack_pending=2, floor=10, delivered=12, last=12) == 11


def test_an_idle_consumer_short_of_the_log_has_a_message_in_flight() -> None:
    # a replicated log acknowledged 11 before the consumer's server counted it
    assert unapplied_from(pending=0, ack_pending=0, floor=10, delivered=10, last=11) == 11


def test_an_idle_consumer_at_the_end_of_the_log_waits_for_nothing() -> None:
    assert unapplied_from(pending=0, ack_pending=0, floor=10, delivered=10, last=10) is None


def test_a_message_that_ran_out_of_deliveries_is_not_waited_for() -> None:
    # 11 was delivered (max_deliver times) and never acked: the floor stays at 10
    assert unapplied_from(pending=0, ack_pending=0, floor=10, delivered=11, last=11) is None
    # but a message logged after it is
    assert unapplied_from(pending=0, ack_pending=0, floor=10, delivered=11, last=12) == 12


@given(
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 100),
    st.integers(0, 20),
    st.integers(0, 20),
)
def test_a_logged_message_the_consumer_has_not_delivered_is_always_looked_for(
    pending: int, ack_pending: int, floor: int, past_floor: int, past_delivered: int
) -> None:
    delivered = floor + past_floor
    last = delivered + past_delivered
    since = unapplied_from(pending, ack_pending, floor, delivered, last)
    if last > delivered:  # the log holds a message the consumer has not handed out
        assert since is not None and since <= delivered + 1
    if pending or ack_pending:
        assert since == floor + 1
    if since is None:
        assert last <= delivered and not pending and not ack_pending
