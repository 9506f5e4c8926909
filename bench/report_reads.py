"""Report sections for reads: mixed read rates and rank cost as boards grow (2, 3 and 5)."""

from __future__ import annotations

from typing import Any

from bench.report_base import ReportBase
from bench.report_format import DASH, Row, X, get, met, num, ratio, size_label, table, times
from bench.report_plots import plot_rank_growth

KINDS_READ = ("top", "player", "around", "friends")


class ReadSections(ReportBase):
    """The reads and rank-growth sections."""

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
