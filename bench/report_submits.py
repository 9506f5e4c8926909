"""Report section for submits: latency, throughput and durability (measurements 1 and 6)."""

from __future__ import annotations

from typing import Any

from bench.report_base import ReportBase
from bench.report_format import DASH, X, get, met, num, ratio, table, times
from bench.report_plots import plot_durability, plot_submit_latency


class SubmitsSection(ReportBase):
    """The submits section; the largest one, so it has a module of its own."""

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
