"""Render bench/results/*.json as bench/results/README.md (Markdown tables) and PNG plots.

Each measurement gets Rankd's figure, its baseline's figure and their ratio, with the
machine and the commands that made the figures. Sections whose result file is missing are
left out; a result file of an unknown shape is listed with its top-level figures. Plots
need matplotlib (``pip install -e '.[bench]'``); without it the tables are still written.

    python -m bench.report
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.common import RESULTS

Row = list[str]
KNOWN = ("wrk", "submits", "reads", "rank_growth", "rebuild", "freeze", "moderation", "events")
DASH, X = "\u2013", "\u00d7"  # en dash for "no figure", multiplication sign for ratios
KINDS_READ = ("top", "player", "around", "friends")


# --- formatting -------------------------------------------------------------------------------


def num(value: Any, unit: str = "") -> str:
    """A figure for a table: thousands separators for large values, 2-3 digits for small."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return DASH if value is None else str(value)
    if isinstance(value, float) and math.isnan(value):
        return DASH
    size = abs(value)
    whole = isinstance(value, int) or value.is_integer()
    if whole or size >= 100:
        text = f"{value:,.0f}"
    elif size >= 10:
        text = f"{value:.1f}"
    elif size >= 0.1 or size == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}".rstrip()


def ratio(a: Any, b: Any) -> float | None:
    ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (a, b))
    return a / b if ok and b else None


def times(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}{X}"


def met(flag: Any) -> str:
    return {True: "yes", False: "**no**"}.get(flag, DASH)


def table(header: Row, rows: Iterable[Row]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def get(data: Any, *path: Any, default: Any = None) -> Any:
    for key in path:
        in_dict = isinstance(data, dict) and key in data
        in_list = isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data)
        if not (in_dict or in_list):
            return default
        data = data[key]
    return data


def size_label(n: Any) -> str:
    try:
        value = int(n)
    except (TypeError, ValueError):
        return str(n)
    for factor, suffix in ((1_000_000, "M"), (1_000, "k")):
        if value >= factor and value % factor == 0:
            return f"{value // factor}{suffix}"
    return f"{value:,}"


def command_of(result: dict[str, Any]) -> str:
    command = result.get("command")
    if isinstance(command, str):
        return command
    quick = (
        result.get("quick") or get(result, "workload", "quick") or get(result, "method", "quick")
    )
    module = {"rebuild": "rebuild_rate", "freeze": "freeze_rate"}.get(
        result["name"], result["name"]
    )
    return f"python -m bench.{module}" + (" --quick" if quick else "")


# --- loading ----------------------------------------------------------------------------------


def load(directory: Path) -> dict[str, dict[str, Any]]:
    """Every results file holding a JSON object with a name, by name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(f"skipping {path.name}: {exc}", file=sys.stderr)
            continue
        if not isinstance(data, dict):
            print(f"skipping {path.name}: not a JSON object", file=sys.stderr)
            continue
        data.setdefault("name", path.stem)
        found[str(data["name"])] = data
    return found


# --- plots ------------------------------------------------------------------------------------


def pyplot() -> Any | None:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plots (pip install -e '.[bench]')", file=sys.stderr)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_submit_latency(plt: Any, submits: dict[str, Any], out: Path) -> bool:
    steps = list(get(submits, "single", "steps", default=[]))
    extra = get(submits, "single", "at_1000_per_s")
    if isinstance(extra, dict) and all(
        s.get("offered_per_s") != extra.get("offered_per_s") for s in steps
    ):
        steps.append(extra)
    steps = sorted(
        (s for s in steps if isinstance(s, dict) and "offered_per_s" in s),
        key=lambda s: s["offered_per_s"],
    )
    if not steps:
        return False
    rates = [s["offered_per_s"] for s in steps]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(rates, [s.get("p50_ms") for s in steps], "o-", label="p50")
    ax.plot(rates, [s.get("p99_ms") for s in steps], "s-", label="p99")
    limit = get(submits, "single", "p99_limit_ms", default=10.0)
    ax.axhline(limit, color="grey", linestyle="--", linewidth=1, label=f"p99 limit {limit:g} ms")
    ax.set_yscale("log")
    ax.set_xlabel("offered single-run submits per second (open loop)")
    ax.set_ylabel("latency, ms (from scheduled start)")
    ax.set_title("Single-run submits: latency vs offered rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_durability(plt: Any, submits: dict[str, Any], out: Path) -> bool:
    modes = [m for m in ("always", "2m") if isinstance(get(submits, "durability", m), dict)]
    if len(modes) < 2:
        return False
    labels = {"always": "fsync every write", "2m": "fsync every 2 min"}
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))
    for ax, key, title in zip(
        axes,
        ("single_runs_per_s", "batch_runs_per_s"),
        ("single-run submits", "batches of 1000"),
        strict=True,
    ):
        values = [get(submits, "durability", m, key) or 0 for m in modes]
        bars = ax.bar([labels[m] for m in modes], values, color=["#4878a8", "#a8a8a8"])
        ax.bar_label(bars, labels=[num(v) for v in values])
        ax.set_title(title)
        ax.set_ylabel("runs/s")
        ax.margins(y=0.15)
    fig.suptitle("Durability cost: JetStream sync_interval")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def plot_rank_growth(plt: Any, growth: dict[str, Any], out: Path) -> bool:
    sizes = growth.get("sizes")
    if not isinstance(sizes, list) or not sizes:
        return False
    fig, ax = plt.subplots(figsize=(9, 4.5))
    styles = {"top": "o", "median": "s", "bottom": "^"}
    series = (
        ("rankd_ms", "Rankd", "-", "#4878a8"),
        ("naive_ms", "naive SQL COUNT(*)", "--", "#c44e52"),
        ("redis_zrevrank_ms", "bare ZREVRANK", ":", "#55a868"),
    )
    drawn = False
    for field, label, line, color in series:
        for position, marker in styles.items():
            values = get(growth, field, position)
            if not isinstance(values, list) or len(values) != len(sizes):
                continue
            points = [(s, v) for s, v in zip(sizes, values, strict=True) if v]
            if not points:
                continue
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, line, marker=marker, color=color, label=f"{label}, {position}")
            drawn = True
    if not drawn:
        plt.close(fig)
        return False
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("board size (members)")
    ax.set_ylabel("player-rank latency, ms (median)")
    ax.set_title("Rank cost as boards grow")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


# --- sections ---------------------------------------------------------------------------------


class Report:
    def __init__(self, results: dict[str, dict[str, Any]], out_dir: Path) -> None:
        self.results = results
        self.out_dir = out_dir
        self.plt = pyplot()
        self.summary: list[Row] = []  # measurement, Rankd, baseline, ratio, target, met
        self.sections: list[str] = []
        self.images: list[str] = []

    def image(self, name: str, draw: Callable[[Any, Path], bool]) -> str:
        if self.plt is None:
            return ""
        try:
            if draw(self.plt, self.out_dir / name):
                self.images.append(name)
                return f"\n![{name}]({name})"
        except Exception:
            print(f"plot {name} failed:\n{traceback.format_exc()}", file=sys.stderr)
        return ""

    # measurement 1 and 6
    def submits(self, r: dict[str, Any]) -> None:
        batch, base, single = r.get("batch", {}), r.get("baseline", {}), r.get("single", {})
        b_runs, base_runs = batch.get("runs_per_s"), base.get("runs_per_s")
        target = get(r, "targets", "batch_runs_per_s")
        self.summary.append(
            [
                "Batch submits (1000 runs, durable), runs/s",
                num(b_runs),
                f"{num(base_runs)} (submit_best EVALSHA, pipelined)",
                times(ratio(b_runs, base_runs)),
                "≥ 17,400 runs/s",
                met(get(target, "met")),
            ]
        )
        at = single.get("at_1000_per_s", {})
        self.summary.append(
            [
                "Single-run submits, p99 at 1,000/s",
                num(at.get("p99_ms"), "ms"),
                DASH,
                DASH,
                "≤ 10 ms",
                met(get(r, "targets", "single_p99_ms_at_1000_per_s", "met")),
            ]
        )
        sustained = single.get("highest_sustained_per_s")
        self.summary.append(
            [
                f"Single-run submits, highest rate with p99 ≤ {num(single.get('p99_limit_ms'))} ms",
                f"{num(sustained)}/s",
                f"{num(base_runs)} runs/s",
                times(ratio(sustained, base_runs)),
                DASH,
                DASH,
            ]
        )
        dur = r.get("durability", {})
        for kind, key, ratio_key in (
            ("single-run", "single_runs_per_s", "single_always_vs_interval"),
            ("batch", "batch_runs_per_s", "batch_always_vs_interval"),
        ):
            self.summary.append(
                [
                    f"Durability: {kind} runs/s, fsync every write (vs every 2 min)",
                    num(get(dur, "always", key)),
                    num(get(dur, "2m", key)),
                    times(get(dur, ratio_key)),
                    DASH,
                    DASH,
                ]
            )

        rounds = r.get("rounds")
        median = f", median of {rounds} rounds" if isinstance(rounds, int) and rounds > 1 else ""
        parts = ["## Submits (measurements 1 and 6)", ""]
        parts.append(
            f"Board windows {', '.join(get(r, 'board', 'windows', default=[]))};"
            f" random players among {num(get(r, 'board', 'players'))}; unique run ids;"
            f" `rankd serve --workers {r.get('workers', '?')}`. Every answer comes after the"
            " run is acked by the log."
        )
        parts += ["", "Single-run submits at fixed offered rates (open loop, latency counted"]
        parts += ["from each request's scheduled start, one request per connection at a time):", ""]
        steps = list(single.get("steps", []))
        if at and all(s.get("offered_per_s") != at.get("offered_per_s") for s in steps):
            steps.append(at)
        parts.append(
            table(
                ["offered/s", "achieved/s", "p50", "p99", "errors"],
                (
                    [
                        num(s.get("offered_per_s")),
                        num(s.get("achieved_per_s")),
                        num(s.get("p50_ms"), "ms"),
                        num(s.get("p99_ms"), "ms"),
                        num(s.get("errors")),
                    ]
                    for s in sorted(steps, key=lambda s: s.get("offered_per_s", 0))
                ),
            )
        )
        parts += [
            "",
            f"Highest rate sustained with p99 ≤ {num(single.get('p99_limit_ms'))} ms:"
            f" **{num(sustained)}/s**.",
        ]
        parts.append(self.image("submits_latency.png", lambda p, o: plot_submit_latency(p, r, o)))
        closed = r.get("single_closed", {})
        parts += ["", f"Throughput{median}:", ""]
        parts.append(
            table(
                ["what", "Rankd", "baseline", "ratio"],
                [
                    [
                        f"batch submits, {num(batch.get('clients'))} clients {X} "
                        f"{num(batch.get('runs_per_batch'))} runs, runs/s",
                        num(b_runs),
                        num(base_runs),
                        times(ratio(b_runs, base_runs)),
                    ],
                    [
                        "… including the log consumer's catch-up afterwards, runs/s",
                        num(batch.get("runs_per_s_incl_drain")),
                        num(base_runs),
                        times(ratio(batch.get("runs_per_s_incl_drain"), base_runs)),
                    ],
                    [
                        f"single-run submits, {num(closed.get('concurrency'))} connections, runs/s",
                        num(closed.get("runs_per_s")),
                        num(base_runs),
                        times(ratio(closed.get("runs_per_s"), base_runs)),
                    ],
                ],
            )
        )
        parts += [
            "",
            f"Batch latency p50 {num(batch.get('batch_p50_ms'), 'ms')}, p99"
            f" {num(batch.get('batch_p99_ms'), 'ms')}. Baseline: the same `submit_best` script"
            " with the arguments a submit sends, by EVALSHA straight to the same Redis,"
            f" {num(base.get('connections'))} connections {X} pipelines of"
            f" {num(base.get('calls_per_pipeline'))} calls: {num(base.get('script_calls_per_s'))}"
            f" script calls/s = {num(base_runs)} runs/s (a run is one call per window).",
        ]
        if dur:
            parts += ["", "### Durability cost", ""]
            parts.append(
                table(
                    ["JetStream sync_interval", "single-run runs/s", "batch runs/s"],
                    [
                        [
                            f"`{m}`"
                            + (" (every write, the default here)" if m == "always" else ""),
                            num(get(dur, m, "single_runs_per_s")),
                            num(get(dur, m, "batch_runs_per_s")),
                        ]
                        for m in ("always", "2m")
                        if isinstance(dur.get(m), dict)
                    ]
                    + [
                        [
                            "always / 2m",
                            times(dur.get("single_always_vs_interval")),
                            times(dur.get("batch_always_vs_interval")),
                        ]
                    ],
                )
            )
            parts.append(self.image("durability.png", lambda p, o: plot_durability(p, r, o)))
        self.sections.append("\n".join(parts))

    # measurement 2 (and 5: bytes per member)
    def reads(self, r: dict[str, Any]) -> None:
        sizes = r.get("sizes")
        if not isinstance(sizes, dict) or not sizes:
            raise ValueError("no sizes")
        limit = get(r, "workload", "p99_limit_ms", default=5.0)
        rows: list[Row] = []
        for n, s in sorted(sizes.items(), key=lambda kv: int(kv[0])):
            rk, bl = s.get("rankd", {}), s.get("baseline", {})
            rk_s, bl_s = rk.get("highest_sustained_per_s"), bl.get("highest_sustained_per_s")
            rk_at, bl_at = rk.get("at_2000_per_s", {}), bl.get("at_2000_per_s", {})
            label = size_label(n)
            self.summary.append(
                [
                    f"Reads at {label}: highest mixed rate with p99 ≤ {num(limit)} ms",
                    f"{num(rk_s)}/s",
                    f"{num(bl_s)}/s (bare redis-py)",
                    times(ratio(rk_s, bl_s)),
                    f"≥ 0.5{X} baseline",
                    met(None if (share := ratio(rk_s, bl_s)) is None else share >= 0.5),
                ]
            )
            self.summary.append(
                [
                    f"Reads at {label}: p99 at 2,000 mixed reads/s",
                    num(rk_at.get("p99_ms"), "ms"),
                    num(bl_at.get("p99_ms"), "ms"),
                    times(ratio(rk_at.get("p99_ms"), bl_at.get("p99_ms"))),
                    "≤ 5 ms",
                    met(
                        None
                        if rk_at.get("p99_ms") is None
                        else rk_at["p99_ms"] <= 5.0 and rk_at.get("sustained", True) is not False
                    ),
                ]
            )
            for side, data in (("Rankd", rk), ("redis-py", bl)):
                at = data.get("at_2000_per_s", {})
                ep = at.get("by_endpoint", {})
                rows.append(
                    [
                        label,
                        num(s.get("redis_bytes_per_member"), "B"),
                        side,
                        num(at.get("achieved_per_s")),
                        num(at.get("p50_ms"), "ms"),
                        num(at.get("p99_ms"), "ms"),
                        *(num(get(ep, k, "p99_ms"), "ms") for k in KINDS_READ),
                        f"{num(data.get('highest_sustained_per_s'))}/s",
                    ]
                )
        parts = ["## Reads (measurement 2)", ""]
        mix = get(r, "workload", "mix")
        if mix:
            parts += [f"Mix: {mix}; open loop at fixed offered rates.", ""]
        parts.append(
            table(
                [
                    "members",
                    "Redis B/member",
                    "client",
                    "achieved/s at 2,000",
                    "p50",
                    "p99",
                    *(f"{k} p99" for k in KINDS_READ),
                    f"highest with p99 ≤ {num(limit)} ms",
                ],
                rows,
            )
        )
        self.sections.append("\n".join(parts))

    # measurement 3
    def rank_growth(self, r: dict[str, Any]) -> None:
        sizes = r.get("sizes")
        if not isinstance(sizes, list) or not sizes:
            raise ValueError("no sizes")
        positions = [p for p in ("top", "median", "bottom") if get(r, "rankd_ms", p) is not None]
        rows = []
        for i, n in enumerate(sizes):
            row = [size_label(n)]
            for p in positions:
                rankd, naive = get(r, "rankd_ms", p, i), get(r, "naive_ms", p, i)
                row += [num(rankd, "ms"), num(naive, "ms"), times(ratio(naive, rankd))]
            rows.append(row)
        header = ["members"]
        for p in positions:
            header += [f"{p}: Rankd", f"{p}: naive SQL", f"{p}: naive / Rankd"]
        first, last = size_label(sizes[0]), size_label(sizes[-1])
        growth = r.get("growth_largest_over_smallest", {})
        for p in positions:
            rankd_growth = get(growth, "rankd", p) or ratio(
                get(r, "rankd_ms", p, -1), get(r, "rankd_ms", p, 0)
            )
            naive_growth = get(growth, "naive", p) or ratio(
                get(r, "naive_ms", p, -1), get(r, "naive_ms", p, 0)
            )
            if p == "median" or len(positions) == 1:
                self.summary.append(
                    [
                        f"Rank latency growth {first} → {last} (median player)",
                        times(rankd_growth),
                        f"{times(naive_growth)} (naive SQL)",
                        DASH,
                        f"≤ 1.5{X}",
                        met(None if rankd_growth is None else rankd_growth <= 1.5),
                    ]
                )
                self.summary.append(
                    [
                        f"Rank latency at {last} (median player)",
                        num(get(r, "rankd_ms", p, -1), "ms"),
                        f"{num(get(r, 'naive_ms', p, -1), 'ms')} (naive SQL)",
                        times(ratio(get(r, "naive_ms", p, -1), get(r, "rankd_ms", p, -1))),
                        DASH,
                        DASH,
                    ]
                )
        parts = ["## Rank cost as boards grow (measurement 3)", ""]
        method = r.get("method", {})
        if isinstance(method, dict):
            for key in ("rankd", "naive", "players"):
                if isinstance(method.get(key), str):
                    parts.append(f"- {key}: {method[key]}")
            parts.append("")
        parts.append("Median latency per rank lookup:")
        parts += ["", table(header, rows)]
        parts.append(self.image("rank_growth.png", lambda p, o: plot_rank_growth(p, r, o)))
        self.sections.append("\n".join(parts))

    # measurement 4 (and 5)
    def rebuild(self, r: dict[str, Any]) -> None:
        results = r.get("results")
        if not isinstance(results, list) or not results:
            raise ValueError("no results")
        rows = []
        for x in sorted(results, key=lambda x: x.get("members", 0)):
            label = size_label(x.get("members"))
            rankd, raw = x.get("rankd_members_per_s"), x.get("raw_members_per_s")
            to_raw = ratio(rankd, raw)
            rows.append(
                [
                    label,
                    num(rankd),
                    num(x.get("rankd_seconds"), "s"),
                    num(raw),
                    num(x.get("raw_seconds"), "s"),
                    times(to_raw),
                    num(x.get("redis_bytes_per_member"), "B"),
                ]
            )
            self.summary.append(
                [
                    f"Rebuild at {label} from PostgreSQL, members/s",
                    num(rankd),
                    f"{num(raw)} (redis-cli --pipe)",
                    times(to_raw),
                    f"≥ 500,000/s and ≥ 0.8{X}",
                    met(None if to_raw is None else rankd >= 500_000 and to_raw >= 0.8),
                ]
            )
            self.summary.append(
                [
                    f"Memory at {label}, Redis bytes per member",
                    num(x.get("redis_bytes_per_member"), "B"),
                    f"110{DASH}121 B (Redis's own floor, issue 4)",
                    DASH,
                    "≤ 125 B",
                    met(
                        None
                        if x.get("redis_bytes_per_member") is None
                        else x["redis_bytes_per_member"] <= 125
                    ),
                ]
            )
        parts = ["## Rebuild and memory (measurements 4 and 5)", ""]
        method = r.get("method", {})
        if isinstance(method, dict):
            parts += [f"- {k}: {v}" for k, v in method.items() if isinstance(v, str)] + [""]
        parts.append(
            table(
                [
                    "members",
                    "Rankd rebuild/s",
                    "Rankd time",
                    "raw load/s",
                    "raw time",
                    "Rankd / raw",
                    "Redis B/member",
                ],
                rows,
            )
        )
        self.sections.append("\n".join(parts))

    def freeze(self, r: dict[str, Any]) -> None:
        results = r.get("results")
        if not isinstance(results, list) or not results:
            raise ValueError("no results")
        rows = []
        for x in sorted(results, key=lambda x: x.get("entries", 0)):
            label = size_label(x.get("entries"))
            rankd, base = x.get("rankd_entries_per_s"), x.get("baseline_entries_per_s")
            rows.append(
                [
                    label,
                    num(rankd),
                    num(x.get("rankd_seconds"), "s"),
                    num(x.get("from_player_best_entries_per_s")),
                    num(base),
                    times(ratio(rankd, base)),
                    num(x.get("leave_redis_seconds"), "s"),
                ]
            )
            self.summary.append(
                [
                    f"Freeze a closed period of {label} into the archive, entries/s",
                    num(rankd),
                    f"{num(base)} (PostgreSQL INSERT SELECT alone)",
                    times(ratio(rankd, base)),
                    DASH,
                    DASH,
                ]
            )
        parts = ["## Season freeze", ""]
        method = r.get("method", {})
        if isinstance(method, dict):
            parts += [f"- {k}: {v}" for k, v in method.items() if isinstance(v, str)] + [""]
        parts.append(
            table(
                [
                    "entries",
                    "Rankd freeze/s",
                    "Rankd time",
                    "from player_best/s",
                    "PostgreSQL alone/s",
                    "Rankd / PostgreSQL",
                    "leaving Redis",
                ],
                rows,
            )
        )
        self.sections.append("\n".join(parts))

    def moderation(self, r: dict[str, Any]) -> None:
        latency, base, history = r["latency"], r["redis_baseline"], r["long_history"]
        self.summary.append(
            [
                "Ban to invisible on every process (p99, under a submit stream)",
                num(latency["hidden_p99_ms"], "ms"),
                f"{num(base['p99_ms'], 'ms')} (bare Redis ZREM+ZADD)",
                DASH,
                "1000 ms",
                met(latency["hidden_p99_ms"] <= 1000),
            ]
        )
        parts = ["## Moderation", ""]
        parts.append(
            table(
                ["measurement", "p50", "p99", "max"],
                [
                    [
                        f"ban call to gone from the public top, {latency['bans']} bans",
                        num(latency["hidden_p50_ms"], "ms"),
                        num(latency["hidden_p99_ms"], "ms"),
                        num(latency["hidden_max_ms"], "ms"),
                    ],
                    [
                        "the ban call itself (both sweeps' first)",
                        num(latency["call_p50_ms"], "ms"),
                        num(latency["call_p99_ms"], "ms"),
                        DASH,
                    ],
                    [
                        "baseline: bare Redis ZREM + ZADD in one MULTI",
                        num(base["p50_ms"], "ms"),
                        num(base["p99_ms"], "ms"),
                        DASH,
                    ],
                ],
            )
        )
        parts += [
            "",
            f"A player with entries in {history['periods']:,} periods (3 boards, 4 windows):"
            f" ban {history['ban_seconds']} s, unban {history['unban_seconds']} s.",
        ]
        self.sections.append("\n".join(parts))

    # closed-loop throughput under wrk, beside the Go peers' published figures
    def wrk(self, r: dict[str, Any]) -> None:
        shape = r["wrk"]
        label = {"submit": "submit one run (1 window)", "rank": "one player's rank"}
        label["top10"] = "top 10"
        rows = []
        for res in r["results"]:
            load = res["load"]
            goal = get(r, "goals", load)
            podium, nakama = get(r, "podium", load), get(r, "nakama", load)
            ok = None
            if goal:
                ok = res["median_req_per_s"] >= goal[0] and res["median_p99_ms"] <= goal[1]
                self.summary.append(
                    [
                        f"wrk {label.get(load, load)}, --workers {res['workers']}, req/s (p99)",
                        f"{num(res['median_req_per_s'])} ({num(res['median_p99_ms'], 'ms')})",
                        f"{num(podium[0])} ({num(podium[1], 'ms')}) TFG Podium" if podium else DASH,
                        times(ratio(res["median_req_per_s"], podium[0] if podium else None)),
                        f"≥ {num(goal[0])}/s, p99 ≤ {num(goal[1], 'ms')}",
                        met(ok),
                    ]
                )
            lag = DASH
            if load == "submit":
                ends = ", ".join(num(x, "s") for x in res.get("end_oldest_unacked_s", []))
                lag = f"worst {num(res.get('max_oldest_unacked_s'), 's')}; at the end {ends}"
            rows.append(
                [
                    label.get(load, load),
                    str(res["workers"]),
                    num(res["median_req_per_s"]),
                    num(res["median_p50_ms"], "ms"),
                    num(res["median_p99_ms"], "ms"),
                    ", ".join(num(run["req_per_s"]) for run in res["runs"]),
                    lag,
                    f"≥ {num(goal[0])}, ≤ {num(goal[1], 'ms')}" if goal else DASH,
                    f"{num(podium[0])}, {num(podium[1], 'ms')}" if podium else DASH,
                    f"{num(nakama[0])}, {num(nakama[1], 'ms')}" if nakama else DASH,
                ]
            )
        parts = ["## Closed loop under wrk", ""]
        parts.append(
            f"`wrk -t{shape['threads']} -c{shape['connections']} -d{shape['seconds']}s"
            f" --latency`, {shape['repeats']} runs per line (median req/s, median p50 and p99),"
            f" board of {get(r, 'board', 'members', default=0):,} players, `rankd serve"
            " --workers N`; service, servers and wrk on the same cores. Lag: the log"
            " consumer's oldest unapplied run (from /readyz, refreshed every 2 s) during and"
            " at the end of each submit run. TFG Podium and Nakama: their published figures"
            " for the same shape on the same kind of machine (not measured here)."
        )
        before, after = r.get("loadavg_before"), r.get("loadavg_after")
        if isinstance(before, list) and before and isinstance(after, list) and after:
            parts[-1] += (
                f" Load average before {', '.join(map(str, before))},"
                f" after {', '.join(map(str, after))}."
            )
        parts.append("")
        parts.append(
            table(
                [
                    "load",
                    "workers",
                    "req/s",
                    "p50",
                    "p99",
                    "req/s of each run",
                    "log consumer lag",
                    "goal (req/s, p99)",
                    "TFG Podium",
                    "Nakama",
                ],
                rows,
            )
        )
        sus = r.get("sustain")
        if isinstance(sus, dict):
            lag = sus["lag"]
            parts += [
                "",
                f"Sustained: submits for {num(sus['seconds'], 's')} at `--workers"
                f" {sus['workers']}`: {num(sus['req_per_s'])} req/s, p99"
                f" {num(sus['p99_ms'], 'ms')}; the oldest unapplied run was at worst"
                f" {num(lag.get('max_oldest_unacked_s'), 's')} old"
                f" ({lag.get('samples', 0)} samples; at the end"
                f" {num(lag.get('end_oldest_unacked_s'), 's')}), goal under 1 s:"
                f" {met(sus.get('lag_under_1s'))}; the consumer caught up"
                f" {num(sus.get('drain_after_s'), 's')} after the load stopped.",
            ]
        self.sections.append("\n".join(parts))

    def events(self, r: dict[str, Any]) -> None:
        lat, base, idle = r["latency"], r["baseline_pubsub"], r["idle"]
        self.summary.append(
            [
                "Live: submit's 2xx to the event on a connected stream, p50 / p99",
                f"{num(lat['event_after_2xx_p50_ms'], 'ms')} / "
                f"{num(lat['event_after_2xx_p99_ms'], 'ms')}",
                f"{num(base['p50_ms'], 'ms')} / {num(base['p99_ms'], 'ms')} (bare Redis pub/sub)",
                DASH,
                DASH,
                DASH,
            ]
        )
        self.summary.append(
            [
                f"Live: {num(idle['streams'])} idle streams in one process, RSS added / CPU",
                f"{num(idle['rss_with_streams_mib'] - idle['rss_before_mib'], 'MiB')} / "
                f"{num(idle['idle_cpu_percent'])} %",
                DASH,
                DASH,
                DASH,
                DASH,
            ]
        )
        parts = ["## Live updates (event streams)", ""]
        method = r.get("method", {})
        if isinstance(method, dict):
            parts += [f"- {k}: {v}" for k, v in method.items() if isinstance(v, str)] + [""]
        parts.append(
            table(
                ["what", "p50", "p99", "max"],
                [
                    [
                        f"submit's 2xx → top event ({lat['submits']} submits)",
                        num(lat["event_after_2xx_p50_ms"], "ms"),
                        num(lat["event_after_2xx_p99_ms"], "ms"),
                        num(lat["event_after_2xx_max_ms"], "ms"),
                    ],
                    [
                        "the submit itself (request → 2xx)",
                        num(lat["submit_p50_ms"], "ms"),
                        num(lat["submit_p99_ms"], "ms"),
                        DASH,
                    ],
                    [
                        "baseline: Redis PUBLISH → redis-py subscriber",
                        num(base["p50_ms"], "ms"),
                        num(base["p99_ms"], "ms"),
                        DASH,
                    ],
                    [
                        f"one submit → all {num(idle['streams'])} idle streams",
                        num(idle["fanout_p50_ms"], "ms"),
                        num(idle["fanout_p99_ms"], "ms"),
                        num(idle["fanout_last_ms"], "ms"),
                    ],
                ],
            )
        )
        parts.append("")
        parts.append(
            table(
                ["idle streams", "RSS before", "RSS with them", "per stream", "CPU idle", "over"],
                [
                    [
                        num(idle["streams"]),
                        num(idle["rss_before_mib"], "MiB"),
                        num(idle["rss_with_streams_mib"], "MiB"),
                        num(idle["rss_per_stream_kib"], "KiB"),
                        f"{num(idle['idle_cpu_percent'])} %",
                        num(idle["idle_seconds"], "s"),
                    ]
                ],
            )
        )
        self.sections.append("\n".join(parts))

    def generic(self, r: dict[str, Any]) -> None:
        rows = [
            [key, num(value)]
            for key, value in r.items()
            if key not in ("name", "machine", "command")
            and (isinstance(value, int | float | str) or value is None)
        ]
        parts = [f"## {r['name']}", ""]
        parts.append(table(["field", "value"], rows) if rows else "(no top-level figures)")
        self.sections.append("\n".join(parts))

    def render(self) -> str:
        handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "submits": self.submits,
            "reads": self.reads,
            "rank_growth": self.rank_growth,
            "rebuild": self.rebuild,
            "freeze": self.freeze,
            "moderation": self.moderation,
            "events": self.events,
            "wrk": self.wrk,
        }
        ordered = [n for n in KNOWN if n in self.results]
        ordered += sorted(n for n in self.results if n not in KNOWN)
        for name in ordered:
            result = self.results[name]
            handler = handlers.get(name, self.generic)
            before = (len(self.summary), len(self.sections))
            try:
                handler(result)
            except Exception:
                print(
                    f"{name}: unexpected shape, listed as is:\n{traceback.format_exc()}",
                    file=sys.stderr,
                )
                del self.summary[before[0] :]
                del self.sections[before[1] :]
                self.generic(result)
        lines = ["# Benchmark results", ""]
        lines.append(
            "Written by `python -m bench.report` from `bench/results/*.json`; the suite is"
            " `make bench` (full) or `make bench-quick`. Each measurement ran beside its"
            " baseline in the same run, on the same servers."
        )
        lines += ["", *self.machines(ordered), ""]
        if self.summary:
            lines += ["## Summary", ""]
            lines.append(
                table(["measurement", "Rankd", "baseline", "ratio", "target", "met"], self.summary)
            )
            lines.append("")
        for section in self.sections:
            lines += [section, ""]
        lines += ["## Commands", ""]
        for name in ordered:
            result = self.results[name]
            when = get(result, "machine", "when", default="")
            lines.append(f"- `{command_of(result)}`" + (f" ({when})" if when else ""))
        lines.append("- `python -m bench.report`")
        return "\n".join(lines) + "\n"

    def machines(self, names: list[str]) -> list[str]:
        seen: dict[str, list[str]] = {}
        for name in names:
            m = self.results[name].get("machine")
            if isinstance(m, dict):
                line = f"{m.get('cores', '?')} cores, {m.get('cpu', '?')}, {m.get('python', '?')}"
                seen.setdefault(line, []).append(name)
        if len(seen) == 1:
            return [f"Machine: {next(iter(seen))}."]
        return [f"Machine ({', '.join(v)}): {k}." for k, v in seen.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS, help="results directory")
    args = parser.parse_args()
    directory: Path = args.results
    results = load(directory)
    if not results:
        print(f"no results in {directory}; run `make bench` or `make bench-quick` first")
        return
    report = Report(results, directory)
    text = report.render()
    path = directory / "README.md"
    path.write_text(text)
    print(f"wrote {path} ({', '.join(results)}) at {time.strftime('%H:%M:%S')}")
    for image in report.images:
        print(f"wrote {directory / image}")


if __name__ == "__main__":
    main()
