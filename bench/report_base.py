"""What every report section writes into: the summary rows, the sections, the plots.

The section mixins (bench/report_submits.py and its siblings) build on this class, so that
each can live in its own module and still add to one report.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report_format import Row, num, table
from bench.report_plots import pyplot


class ReportBase:
    """The report's collected state, plot drawing and the fallback section."""

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
