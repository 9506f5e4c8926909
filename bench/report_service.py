"""Report sections for the running service: moderation, closed loop under wrk, live updates."""

from __future__ import annotations

from typing import Any

from bench.report_base import ReportBase
from bench.report_format import DASH, get, met, num, ratio, table, times


class ServiceSections(ReportBase):
    """The moderation, wrk and event-stream sections."""

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
