"""The service's log lines: one format for every process that serves.

``rankd serve --workers N`` starts its workers with multiprocessing's *spawn*, so a worker
inherits none of the parent's logging setup: without this the access log (INFO) fell to
logging's last-resort handler, which prints WARNING and up only, bare of time, level and
logger. Each worker calls ``configure`` again as it starts (``api/server.py``).
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure(level: str) -> None:
    """Send every logger's records to stderr in the service's format, at ``level``."""
    logging.basicConfig(level=level.upper(), format=FORMAT)
