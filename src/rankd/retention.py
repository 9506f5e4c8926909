"""RANKD_LOG_RETENTION: how long, and how much, of the run log is kept (CONTRACT v1.3).

A comma-separated age and/or size: ``7d`` (the default), ``36h``, ``20gb``, ``7d,20gb``.
Units: s, m, h, d for ages; b, kb, mb, gb, tb (powers of 1024) for sizes. Neither limit ever
drops a message the durable copy has not applied (services/log_retention.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_AGE = re.compile(r"([1-9][0-9]{0,6})(s|m|h|d)")
_SIZE = re.compile(r"([1-9][0-9]{0,9})(b|kb|mb|gb|tb)", re.IGNORECASE)
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_BYTES = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


@dataclass(frozen=True, slots=True)
class Retention:
    max_age_s: int | None  # None: no age limit
    max_bytes: int | None  # None: no size limit


def parse_retention(text: str) -> Retention:
    """The limits ``text`` names; ValueError (one sentence) if it is not of that form."""
    age: int | None = None
    size: int | None = None
    parts = [p.strip() for p in text.split(",")]
    for part in parts:
        if (found := _AGE.fullmatch(part)) is not None and age is None:
            age = int(found[1]) * _SECONDS[found[2]]
        elif (found := _SIZE.fullmatch(part)) is not None and size is None:
            size = int(found[1]) * _BYTES[found[2].lower()]
        else:
            raise ValueError(
                "must be an age and/or a size, comma-separated, like 7d, 36h, 20gb or 7d,20gb"
            )
    return Retention(age, size)
