"""Concurrent requests' Redis calls, sent together: one pipeline for many requests.

Under load most of a request's Redis cost is the client's, per round trip: taking a
connection from the pool, a socket write, waking up for the reply. Group commit already
lets concurrent submits share one log message; this does the same for their script calls
and for concurrent reads. A caller hands its calls to the batcher and awaits its results;
at most ``max_in_flight`` pipelines are on the wire at once, and calls that arrive meanwhile
leave together in the next one. At low load a call leaves on the next turn of the event
loop, so nothing waits that would not have.

Each caller gets its own results (or its own first error) back, exactly as from a pipeline
of its own: the calls are independent scripts and commands, and a non-transactional
pipeline runs them in order, each on its own. Bounded: a pipeline carries at most
``max_calls`` calls; the waiting calls are bounded by the requests in flight (each waits for
its own), which the HTTP server's connection cap bounds.

Calls of different requests on the same keys fold into one call where a script takes many
items (``fold``): concurrent submits' ``submit_best`` calls on one board period become one
``submit_best_many``, their run-id claims one ``run_ids``. Redis's work and the client's
(packing and parsing each command) is per command, so a pipeline of twelve submits costs
two script calls instead of twenty-four. The folded call runs where its first member was;
a member joins only while no call or command on its keys came in between, so every key
sees its calls in the order a pipeline of the single calls would have sent them, and each
caller gets the replies those calls would have given. An error a folded call answers is
every member's, and members before the failing write keep their writes: the errors these
scripts meet (RESTORING, OOM, a key of the wrong type) come from the keys the members share
or from Redis, not from one member's arguments, so a member's own call would mostly have met
it too; a key of the wrong type that one member's own call never reaches (another player's
exact-times hash, a registry bucket after the one its run was found in), or an OOM for a
member whose own call writes nothing, tells them apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from rankd.inflight import InFlight
from rankd.stores.redis.scripts import (
    FOLD_MAX_ARGS,
    RUN_IDS,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_REPLY_WIDTH,
    Call,
    Command,
    Script,
    send_requests,
)


@dataclass(slots=True)
class _Waiting:
    calls: Sequence[Call]
    extra: Sequence[Command]

    @property
    def size(self) -> int:
        return len(self.calls) + len(self.extra)


class Batcher:
    def __init__(self, redis: Redis, *, max_in_flight: int = 4, max_calls: int = 5000) -> None:
        self.redis = redis
        self.max_in_flight = max_in_flight
        self.max_calls = max_calls
        # at most max_in_flight pipelines; the calls of one turn of the event loop, and
        # those that arrive while every pipeline is out, leave together (rankd/inflight.py)
        self._dispatcher: InFlight[_Waiting, list[Any]] = InFlight(
            self._pipeline,
            max_in_flight=max_in_flight,
            max_size=max_calls,
            size=lambda item: item.size,
            next_turn=True,
        )

    async def run(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """The results of ``calls`` then ``extra``, as one pipeline of their own would give
        them; the first error among them is raised."""
        return await self._dispatcher.submit(_Waiting(calls, extra))

    async def call(self, call: Call) -> Any:
        [result] = await self.run([call])
        return result

    async def _pipeline(self, taken: list[_Waiting]) -> list[list[Any] | BaseException]:
        """Every waiter's calls and commands, in one pipeline (calls folded, see ``fold``);
        errors left in place. After NOSCRIPT (Redis lost its scripts) the scripts are
        loaded and the pipeline resent, which the scripts' idempotence makes safe
        (scripts.py). Each waiter gets its own results, or the first error among them."""
        requests, replies = fold([(item.calls, item.extra) for item in taken])
        results = replies(await send_requests(self.redis, requests))
        out: list[list[Any] | BaseException] = []
        for mine in results:
            error = next((r for r in mine if isinstance(r, Exception)), None)
            out.append(mine if error is None else error)
        return out


@dataclass(frozen=True, slots=True)
class _Kind:
    """A script whose calls fold: ``head`` leading arguments every call has (times; the
    folded call takes their maximum), then items of ``width`` arguments, each answered by
    ``reply_width`` values of a flat reply."""

    family: str
    many: Script  # the script of the folded call
    head: int
    width: int
    reply_width: int


# submit_best: composite, member, ended, mark, now, forget, metadata (one item around its
# head); submit_best_many: now, forget, then quintuples; run_ids: expiry, then quintuples.
# A later ``now`` stamps a mark a few ms later, a later ``forget`` drops marks older by as
# much (they are kept 15 s); a later expiry keeps a bucket a moment longer.
_KINDS = {
    SUBMIT_BEST: _Kind("best", SUBMIT_BEST_MANY, 2, 5, SUBMIT_REPLY_WIDTH),
    SUBMIT_BEST_MANY: _Kind("best", SUBMIT_BEST_MANY, 2, 5, SUBMIT_REPLY_WIDTH),
    RUN_IDS: _Kind("run_ids", RUN_IDS, 1, 5, 1),
}


def _head_and_items(script: Script, args: Sequence[Any]) -> tuple[Sequence[Any], Sequence[Any]]:
    if script is SUBMIT_BEST:
        return args[4:6], (*args[:4], args[6] if len(args) > 6 else "")
    head = _KINDS[script].head
    return args[:head], args[head:]


@dataclass(slots=True)
class _Group:
    kind: _Kind
    keys: Sequence[str]
    members: list[Call]
    values: int = 0  # reply values its members take
    args: int = 0  # its members' item arguments (bounded: scripts.py FOLD_MAX_ARGS)


def fold(
    requests: Sequence[tuple[Sequence[Call], Sequence[Command]]],
) -> tuple[list[tuple[list[Call], list[Command]]], Callable[[Sequence[Any]], list[list[Any]]]]:
    """The requests to send, their foldable calls folded (see the module docstring), and a
    function from the sent pipeline's results to each request's own results, one per call
    and command, as if sent unfolded."""
    entries: list[_Group | Call] = []  # each call to send, in order
    opened: list[int] = []  # per request, how many entries it opened
    open_groups: dict[tuple[str, tuple[str, ...]], _Group] = {}
    open_keys: dict[str, list[tuple[str, tuple[str, ...]]]] = {}  # key -> open groups on it
    # per request: per call (entry, first reply value, values; -1: the whole reply)
    slots: list[list[tuple[int, int, int]]] = []
    index: dict[int, int] = {}  # id(group) -> its entry

    def close(touched: Sequence[Any]) -> None:
        """A call or command on these keys: groups holding one take no later member."""
        for key in touched:
            if isinstance(key, str):
                for found in open_keys.pop(key, ()):
                    open_groups.pop(found, None)

    for calls, extra in requests:
        before = len(entries)
        mine: list[tuple[int, int, int]] = []
        for call in calls:
            script, call_keys, args = call
            kind = _KINDS.get(script)
            if kind is None:
                close(call_keys)
                mine.append((len(entries), 0, -1))
                entries.append(call)
                continue
            _, items = _head_and_items(script, args)
            values = len(items) // kind.width * kind.reply_width
            name = (kind.family, tuple(call_keys))
            group = open_groups.get(name)
            if group is not None and group.args + len(items) > FOLD_MAX_ARGS:
                group = None  # full: the next call on these keys starts a new one, after it
            if group is None:
                close(call_keys)  # open groups never share a key
                group = open_groups[name] = _Group(kind, call_keys, [])
                for key in call_keys:
                    open_keys.setdefault(key, []).append(name)
                index[id(group)] = len(entries)
                entries.append(group)
            mine.append((index[id(group)], group.values, values))
            group.members.append(call)
            group.values += values
            group.args += len(items)
        for _, command_args in extra:
            close(command_args)
        opened.append(len(entries) - before)
        slots.append(mine)
    sent: list[tuple[list[Call], list[Command]]] = []
    position: list[int] = []  # each entry's place in the pipeline's flat results
    command_at: list[int] = []  # each request's first command's place
    pos = at = 0
    for (_, extra), n in zip(requests, opened, strict=True):
        sent.append(([_call_of(e) for e in entries[at : at + n]], list(extra)))
        position.extend(range(pos, pos + n))
        at += n
        pos += n
        command_at.append(pos)
        pos += len(extra)

    def replies(results: Sequence[Any]) -> list[list[Any]]:
        out: list[list[Any]] = []
        for (_, extra), mine, first_command in zip(requests, slots, command_at, strict=True):
            own: list[Any] = []
            for entry, first, values in mine:
                result = results[position[entry]]
                if values < 0 or isinstance(result, BaseException) or not isinstance(result, list):
                    own.append(result)  # its own call, an error, or run_ids' -2 for all
                else:
                    own.append(result[first : first + values])
            own.extend(results[first_command : first_command + len(extra)])
            out.append(own)
        return out

    return sent, replies


def _call_of(entry: _Group | Call) -> Call:
    """The call to send for one entry: a lone call as it was, a group as one call."""
    if not isinstance(entry, _Group):
        return entry
    if len(entry.members) == 1:
        return entry.members[0]
    kind = entry.kind
    heads: list[Sequence[Any]] = []
    items: list[Any] = []
    for script, _, args in entry.members:
        head, own = _head_and_items(script, args)
        heads.append(head)
        items.extend(own)
    head = [max(int(h[i]) for h in heads) for i in range(kind.head)]
    return (kind.many, entry.keys, (*head, *items))
