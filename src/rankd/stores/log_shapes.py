"""What the run log hands out: messages, a durable consumer's description, the stream's state,
where a consumer stands in it, and a board's subject token (stores/runlog.py is the log)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class LogMessage:
    """One logged message as the applier takes it; ``handle`` is the log's own, for acks;
    ``stored_ms``: when the log stored it, by the log's clock (0: not known, e.g. a parked
    message replayed from PostgreSQL)."""

    seq: int
    subject: str
    data: bytes
    handle: object = field(default=None, compare=False, repr=False)
    stored_ms: int = field(default=0, compare=False)

    @classmethod
    def of_jetstream(cls, msg: Any) -> LogMessage:
        """A JetStream message (nats-py's ``Msg``) as handed out: its stream sequence and
        stored time come with its ack subject (parsed once, kept by nats-py)."""
        meta = msg.metadata
        stored_ms = int(meta.timestamp.timestamp() * 1000)
        return cls(int(meta.sequence.stream), msg.subject, msg.data, msg, stored_ms)


@dataclass(frozen=True, slots=True)
class Durable:
    """A consumer every instance shares: each message goes to one of them until acked."""

    name: str
    backoff_s: Sequence[float]  # delays before a batch that was not acked is delivered again
    max_deliver: int  # deliveries of one message before the log stops trying (-1: never)
    max_ack_pending: int  # messages delivered and not yet acked, over every instance


@dataclass(frozen=True, slots=True)
class LogState:
    first: int  # the oldest message's sequence (last + 1 when empty)
    last: int
    messages: int
    bytes: int
    created: str = ""  # when the stream was created: which history its sequences number


def time_ms(stamp: object) -> int:
    """A stored message's time (JetStream's RFC 3339 with nanoseconds) in ms."""
    if isinstance(stamp, datetime):
        return int(stamp.timestamp() * 1000)
    text = str(stamp).replace("Z", "+00:00")
    head, dot, rest = text.partition(".")
    if dot:  # at most microseconds for fromisoformat
        digits = "".join(itertools.takewhile(str.isdigit, rest))
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    return int(datetime.fromisoformat(text).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class LogLag:
    """Where a durable consumer stands in the log."""

    pending: int  # not delivered yet
    ack_pending: int  # delivered, not acked yet
    ack_floor: int  # every message up to this sequence is acked
    oldest_unacked: bytes | None  # the payload of the oldest message still to apply, if any
    caught_up: bool  # every message the log holds is applied (or gone from it)


def unapplied_from(
    pending: int, ack_pending: int, floor: int, delivered: int, last: int
) -> int | None:
    """Where the oldest message still to apply may be: past the ack floor while messages wait;
    past what was delivered while the consumer says idle but the log holds more (a replicated
    log acks a publish before the consumer's server counts it); None when nothing waits."""
    if pending or ack_pending:
        return floor + 1
    if last > delivered:
        return delivered + 1
    return None


def subject_token(board_id: str) -> str:
    """The board id as one subject token: ``.`` separates tokens, so it becomes ``~``.

    Board ids are ``[a-z0-9_.-]`` (boards.BOARD_ID), which holds no ``~``, so two boards
    never share a subject, and ids without a dot keep the subject they always had. The
    board id itself travels in the message body; the subject only has to be valid.
    """
    return board_id.replace(".", "~")
