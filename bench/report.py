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
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS
from bench.report_document import Report

# The report is split by job: report_format (figures and tables), report_plots (PNGs),
# report_base (shared state), report_submits/_reads/_storage/_service (one module per group
# of sections) and report_document (order and the whole page). This module reads and writes.


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
