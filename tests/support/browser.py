"""The headless Chromium the browser tests drive (through Playwright): where it is, and the
flags that keep it quiet on a machine with no internet."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = next(
    (
        p
        for p in (os.environ.get("RANKD_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium")
        if p and Path(p).is_file()
    ),
    None,
)
# a closed network refuses the browser's own background traffic; these keep it quiet
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
