"""Formatting helpers for the benchmark report: figures, ratios, Markdown tables, labels.

Shared by every section so that a figure reads the same wherever it appears.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

Row = list[str]
DASH, X = "\u2013", "\u00d7"  # en dash for "no figure", multiplication sign for ratios


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
