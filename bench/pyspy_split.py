"""Split a durable submit's py-spy profile into the parts of the work it does.

Each sample (``py-spy record --format raw``: collapsed stacks) goes to the first part whose
rule matches its stack, innermost frames deciding within the submit route and the log
consumer. The parts: the HTTP layer (uvicorn, the middlewares, the response write),
validation (the body's parse and checks), the submit service (rankd's own code on the way),
the run-id claim, group commit and the log publish, the Redis calls (the batcher's
pipelines, their socket writes), the consumer (its fetch, PostgreSQL, the marks, the Redis
writes, the acks, its own code), the NATS client's flusher (publishes and acks leave
through it), background loops (health, bans, lag) and the event loop itself (uvloop's C
loop: a sample with no Python frame but the loop's).

    python -m bench.pyspy_split profile.collapsed.txt
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from bench.pyspy_summary import parse

# (part, any of these in a frame) in order; within the consumer and the route the
# innermost matching rule decides, so these are checked innermost first
CONSUMER = "consumer"
CONSUMER_PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("consumer: fetch", ("JetStreamSubscription.fetch",)),
    ("consumer: ack", ("JetStreamSubscription.ack",)),
    ("consumer: marks (Redis)", ("WritePipeline._marked", "Marks.find_marks")),
    ("consumer: Redis writes", ("WritePipeline._send",)),
    (
        "consumer: PostgreSQL",
        (
            "(psycopg",
            "rankd/stores/standings.py",
            "rankd/stores/fingerprints.py",
            "rankd/stores/deletions.py",
            "PostgresStore.apply_lock",
            "follow_decisions",
        ),
    ),
]
ROUTE_PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("group commit + log publish", ("GroupCommitter", "rankd/stores/runlog.py", "(nats/")),
    ("run-id claim", ("RunIds.claim", "claim_run_ids")),
    ("Redis call", ("(redis/", "rankd/stores/redis/", "InFlight")),
    ("validation", ("read_json", "rankd/validation.py", "(json/", "parse_run", "_count_runs")),
    ("submit service", ("rankd/services/", "submit_run")),
]
HTTP = ("(uvicorn/", "(starlette/", "(fastapi/", "rankd/api/", "(prometheus_client/")
BACKGROUND = ("Health.", "BanList", "LogConsumer._watch_lag", "PostgresStore.ping", "ping (")


def first_part(text: str, parts: list[tuple[str, tuple[str, ...]]], default: str) -> str:
    """The first of ``parts`` (name, marks) with a mark in the stack ``text``."""
    for name, marks in parts:
        if any(m in text for m in marks):
            return name
    return default


def part_of(frames: list[str]) -> str:
    text = ";".join(frames)
    leaf = frames[-1] if frames else ""
    if not frames or (
        "Runner.run" in leaf
        and "(rankd/" not in text.replace("rankd/cli", "").replace("rankd/api/server.py", "")
    ):
        return "event loop"
    if "LogConsumer._run" in text or "apply_log" in text:
        return first_part(text, CONSUMER_PARTS, "consumer: its own code (decode, plan, batch)")
    if any(m in text for m in BACKGROUND):
        return "background loops"
    if "GroupCommitter" in text or "JetStreamLog.publish" in text:
        return "group commit + log publish"
    if "Batcher" in text or "send_requests" in text or "_send_packed_command" in text:
        return "Redis call"
    if "Client._flusher" in text:
        return "NATS client flusher (publishes, acks)"
    if "(nats/" in text:
        return "NATS client reader (acks, fetched messages)"
    if "submit_run" in text:
        return first_part(text, ROUTE_PARTS, "submit service")
    if any(m in text for m in HTTP):
        return "HTTP layer"
    if "(redis/" in text:
        return "Redis call"
    if "(psycopg" in text:
        return "PostgreSQL, elsewhere"
    if "(asyncio/" in leaf:
        return "event loop"
    if "rankd/stores/redis/" in text or "InFlight" in text:
        return "Redis call"
    if "rankd/services/" in text or "rankd/stores/" in text:
        return "submit service"
    return "other"


def split(text: str) -> tuple[int, Counter[str]]:
    parts: Counter[str] = Counter()
    total = 0
    for frames, count in parse(text):
        parts[part_of(frames)] += count
        total += count
    return total, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path, help="py-spy record --format raw output")
    args = parser.parse_args()
    total, parts = split(args.profile.read_text())
    print(f"{total} samples")
    for name, count in parts.most_common():
        print(f"{100 * count / total:6.1f}%  {name}")


if __name__ == "__main__":
    main()
