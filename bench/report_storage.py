"""Report sections for bulk moves between PostgreSQL and Redis: rebuild and season freeze."""

from __future__ import annotations

from typing import Any

from bench.report_base import ReportBase
from bench.report_format import DASH, X, met, num, ratio, size_label, table, times


class StorageSections(ReportBase):
    """The rebuild-and-memory (measurements 4 and 5) and season-freeze sections."""

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
