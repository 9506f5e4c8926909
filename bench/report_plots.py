"""The report's PNG plots, drawn with matplotlib when it is installed.

Kept apart from the tables so that the report still writes its Markdown without matplotlib.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.report_format import get, num


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
