"""The report as one document: section order, summary, sections, machines and commands."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

from bench.report_format import command_of, get, table
from bench.report_reads import ReadSections
from bench.report_service import ServiceSections
from bench.report_storage import StorageSections
from bench.report_submits import SubmitsSection

KNOWN = ("wrk", "submits", "reads", "rank_growth", "rebuild", "freeze", "moderation", "events")


class Report(SubmitsSection, ReadSections, StorageSections, ServiceSections):
    """Every section mixed into one report; render() puts them in order."""

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
