"""CPU time per request, by process, from /proc: where a request's microseconds go.

A snapshot reads utime + stime (with those of ended children) of each watched process tree
(the service's workers, Redis, NATS, PostgreSQL's backends) from ``/proc/<pid>/stat``, and
the load generator's from
``getrusage(RUSAGE_CHILDREN)`` (it is this process's only child that exits during a run).
The difference between two snapshots, divided by the requests served in between, is the
budget: microseconds of CPU each process spent per request. The machine's own busy time
(``/proc/stat``) is kept beside it, so CPU that none of these took (other work on a shared
machine) shows too.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, CPU ticks), or None if the process is gone. The ticks are utime + stime
    and cutime + cstime: children that ended (a PostgreSQL backend, say) are still counted,
    through their parent."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name is in parentheses and may hold spaces: split after its last ")"
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), sum(int(v) for v in fields[11:15])


def _all() -> dict[int, tuple[int, int]]:
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                found[int(entry.name)] = stat
    return found


def _tree(root: int, table: Mapping[int, tuple[int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in seen:
            seen.add(pid)
            todo.extend(children.get(pid, ()))
    return seen


def _machine_busy_ticks() -> int:
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields[:8]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle


@dataclass
class Snapshot:
    ticks: dict[str, dict[int, int]]  # group -> pid -> ticks
    children_s: float
    machine_ticks: int


def snapshot(groups: Mapping[str, Iterable[int]]) -> Snapshot:
    """Each group's processes (every root with its descendants) and their CPU ticks."""
    table = _all()
    ticks: dict[str, dict[int, int]] = {}
    for name, roots in groups.items():
        pids: set[int] = set()
        for root in roots:
            pids |= _tree(root, table)
        ticks[name] = {pid: table[pid][1] for pid in pids}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Snapshot(ticks, usage.ru_utime + usage.ru_stime, _machine_busy_ticks())


def budget(before: Snapshot, after: Snapshot, requests: int, wall_s: float) -> dict[str, float]:
    """Microseconds of CPU per request for each group, ``wrk`` (the children that exited in
    between), ``ours`` (their sum), ``machine`` (all CPU used, anyone's) and ``machine_busy``
    (the share of both cores in use over ``wall_s``)."""
    per = 1e6 / max(1, requests)
    result: dict[str, float] = {}
    for name, now in after.ticks.items():
        then = before.ticks.get(name, {})
        # a process that started in between counts from 0; one that ended, through its parent
        used = sum(t - then.get(pid, 0) for pid, t in now.items())
        result[name] = round(used * TICK_S * per, 1)
    result["wrk"] = round((after.children_s - before.children_s) * per, 1)
    result["ours"] = round(sum(result.values()), 1)
    machine_s = (after.machine_ticks - before.machine_ticks) * TICK_S
    result["machine"] = round(machine_s * per, 1)
    cores = os.cpu_count() or 1
    result["machine_busy"] = round(machine_s / max(1e-9, wall_s * cores), 3)
    return result


def budget_line(cpu: Mapping[str, float]) -> str:
    parts = [
        f"{name} {value:,.0f}"
        for name, value in cpu.items()
        if name not in ("ours", "machine", "machine_busy")
    ]
    return (
        f"CPU µs/request: {', '.join(parts)}; ours {cpu['ours']:,.0f} of {cpu['machine']:,.0f}"
        f" on the machine (both cores {cpu['machine_busy']:.0%} busy)"
    )


# --- Redis's own account: INFO cpu and commandstats ------------------------------------------

RedisBusy = tuple[float, dict[str, float]]


def redis_busy_of(cpu_info: dict[str, Any], commandstats: dict[str, Any]) -> RedisBusy:
    """Redis's CPU seconds so far (user + system) and the seconds each command has spent
    executing, from INFO cpu and INFO commandstats: read before and after a load."""
    spent = {name.removeprefix("cmdstat_"): v["usec"] / 1e6 for name, v in commandstats.items()}
    return float(cpu_info["used_cpu_user"]) + float(cpu_info["used_cpu_sys"]), spent


def redis_busy_between(before: RedisBusy, after: RedisBusy) -> dict[str, float]:
    """Redis's CPU seconds between two reads, and each command's execution seconds (the
    ones that took 10 ms or more). Execution is timed, not CPU: it can exceed the CPU."""
    spent = {
        name: round(s - before[1].get(name, 0.0), 3)
        for name, s in after[1].items()
        if s - before[1].get(name, 0.0) >= 0.01
    }
    return {"cpu": round(after[0] - before[0], 3), **spent}
