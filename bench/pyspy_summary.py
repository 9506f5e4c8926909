"""Summarise a py-spy profile (``py-spy record --format raw``: collapsed stacks) as text.

Four tables, each in per cent of all samples (py-spy samples only threads on the CPU, so
that is of the process's busy time): functions by own time (the frame on top of the
stack; time in C code such as uvloop, httptools, hiredis or a socket write counts to the
Python function that called it), functions by cumulative time (on the stack at all,
counted once per sample), the same for rankd's own functions alone, and own time by
package (where the time goes: uvicorn, starlette, fastapi, pydantic, redis, nats...).

    python -m bench.pyspy_summary profile.txt [--top 25]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"(?P<func>.*?) \((?P<file>[^()]*)\)")
ROOT = "_run_module_as_main "  # the outermost frame of `python -m rankd.cli serve`
# Frames every request passes through on its way in (the command line, the server's run
# loop): always near 100% cumulative, so left out of the cumulative table.
FRAMING: tuple[str, ...] = ("(typer/", "(<frozen runpy>)", "(rankd/cli.py)", "(uvicorn/server.py)")
FRAMING += ("(uvicorn/_compat.py)", "Runner.run (asyncio/runners.py)")


def parse(text: str) -> list[tuple[list[str], int]]:
    """Stacks (outermost frame first) and their sample counts."""
    stacks = []
    for line in text.splitlines():
        frames, _, count = line.rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def package(frame: str) -> str:
    """The package of a frame's file: py-spy names files from their import root
    (``uvicorn/protocols/http/httptools_impl.py``, ``asyncio/streams.py``); rankd's own
    files are grouped one level deeper (``rankd/api``, ``rankd/stores``)."""
    match = FRAME.fullmatch(frame)
    path = match["file"] if match else frame
    for marker in ("site-packages/", "dist-packages/", "src/"):
        path = path.split(marker, 1)[-1]
    parts = path.split("/")
    depth = 2 if parts[0] == "rankd" and len(parts) > 2 else 1
    return "/".join(parts[:depth]).removesuffix(".py") or "?"


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
    rooted = 0
    for frames, count in stacks:
        leaf = frames[-1]
        own[short(leaf)] += count
        by_package[package(leaf)] += count
        for frame in {short(f) for f in frames}:
            cumulative[frame] += count
        rooted += count if frames[0].startswith(ROOT) else 0
    framing = {name for name in cumulative if any(part in name for part in FRAMING)}
    library = Counter({k: v for k, v in cumulative.items() if k not in framing})
    ours = Counter({k: v for k, v in library.items() if "(rankd/" in k})

    def rows(counter: Counter[str], n: int = top) -> list[str]:
        return [f"{100 * c / total:6.1f}%  {name}" for name, c in counter.most_common(n)]

    parts = [title, "", f"{total} samples (threads on the CPU; per cent of these below)"]
    parts.append(
        f"{100 * rooted / total:.0f}% of the stacks reach the process's entry point; the"
        " others were read starting at a coroutine (py-spy does not always see past the"
        " event loop's C frames), so cumulative figures of outer frames are low by that much."
    )
    parts += ["", f"## own time, top {top}", *rows(own)]
    parts += ["", f"## cumulative time, top {top} (without the entry point's frames)"]
    parts += rows(library)
    parts += ["", "## cumulative time, rankd's own functions, top 20", *rows(ours, 20)]
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
