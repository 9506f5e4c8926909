"""Summarise a py-spy profile (``py-spy record --format raw``: collapsed stacks) as text.

Three tables, each in per cent of all samples (py-spy samples only threads on the CPU, so
that is of the process's busy time): functions by own time (the frame on top of the
stack; time in C extensions such as httptools or hiredis counts to the Python function
that called them), functions by cumulative time (on the stack at all, counted once per
sample), and own time by package (where the time goes: uvicorn, starlette, fastapi,
pydantic, redis, nats, asyncio, rankd...).

    python -m bench.pyspy_summary profile.txt [--top 25]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"(?P<func>.*?) \((?P<file>[^()]*)\)")
# The package a frame's file belongs to: the folder after site-packages, or the stdlib
# module, or rankd's own module path.
SITE = re.compile(r"(?:site-packages|dist-packages)/([^/]+)")


def parse(text: str) -> list[tuple[list[str], int]]:
    """Stacks (outermost frame first) and their sample counts."""
    stacks = []
    for line in text.splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def package(frame: str) -> str:
    match = FRAME.fullmatch(frame)
    path = match["file"] if match else frame
    if "rankd/" in path:
        rest = path.split("rankd/", 1)[1]
        return "rankd/" + rest.split("/", 1)[0] if "/" in rest else "rankd"
    site = SITE.search(path)
    if site:
        return site[1].removesuffix(".py")
    stdlib = re.search(r"python3\.\d+/([^/]+)", path)
    if stdlib:
        return stdlib[1].removesuffix(".py")
    return path or "?"


def short(frame: str) -> str:
    """``func (file)`` with the file cut to its package-relative path."""
    match = FRAME.fullmatch(frame)
    if not match:
        return frame
    path = match["file"]
    for marker in ("site-packages/", "dist-packages/", "src/", "lib/python3.11/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{match['func']} ({path})"


def summarize(text: str, title: str = "", top: int = 25) -> str:
    stacks = parse(text)
    total = sum(count for _, count in stacks)
    if not total:
        return f"{title}\n\nno samples\n"
    own: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    by_package: Counter[str] = Counter()
    for frames, count in stacks:
        leaf = frames[-1]
        own[short(leaf)] += count
        by_package[package(leaf)] += count
        for frame in {short(f) for f in frames}:
            cumulative[frame] += count

    def rows(counter: Counter[str]) -> list[str]:
        return [f"{100 * n / total:6.1f}%  {name}" for name, n in counter.most_common(top)]

    parts = [title, "", f"{total} samples", "", f"## own time, top {top}", *rows(own)]
    parts += ["", f"## cumulative time, top {top}", *rows(cumulative)]
    parts += ["", "## own time by package", *rows(by_package)]
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(summarize(args.profile.read_text(), str(args.profile), args.top), end="")


if __name__ == "__main__":
    main()
