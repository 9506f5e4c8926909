"""The profile mode of ``python -m bench.wrk --profile`` (bench/wrk.py): each load under
py-spy against ``rankd serve --workers 1``, summaries into bench/results/profiles/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import create_board, servers, service_process
from bench.wrk_measure import fill_board, settle
from bench.wrk_runs import BOARD, run_wrk, wrk_command

PROFILE_RATE = 200  # samples/s


def profile(
    loads: Sequence[str],
    seconds: int,
    out: Path,
    extra_env: dict[str, str],
    raw_dir: Path | None = None,
) -> None:
    """Each load under py-spy against ``rankd serve --workers 1``; summaries into ``out``
    (and the collapsed stacks, for flame graphs, into ``raw_dir``)."""
    from bench.pyspy_summary import summarize

    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    out.mkdir(parents=True, exist_ok=True)
    with (
        servers() as stack,
        service_process(stack, 1, extra_env) as (port, process),
        tempfile.TemporaryDirectory(prefix="rankd-pyspy-") as tmp,
    ):
        create_board(port, BOARD, windows=["all-time"])
        fill_board(port)
        for load in loads:
            settle(stack)
            raw = Path(tmp) / f"{load}.txt"
            # sampling starts a moment after wrk and stops before it, so only load is seen;
            # --nonblocking: pausing the service for each sample would slow what is measured
            record = ["record", "--pid", str(process.pid), "--format", "raw", "--nolineno"]
            record += ["--nonblocking", "--rate", str(PROFILE_RATE)]
            record += ["--duration", str(seconds - 2), "-o", str(raw)]
            spy = subprocess.Popen(
                [py_spy, *record], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            run = run_wrk(load, port, seconds, f"prof{time.time_ns()}")
            _, err = spy.communicate(timeout=60)
            if spy.returncode != 0:
                raise RuntimeError(f"py-spy failed: {err.decode()}")
            shape = " ".join(wrk_command(load, port, seconds, "-")[:5])
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            title = (
                f"{load}: rankd serve --workers 1 under `{shape}` ({run.req_per_s:,.0f} req/s,"
                f" p99 {run.p99_ms:.2f} ms while sampled); py-spy {' '.join(record[3:-4])},"
                f" {when}"
            )
            (out / f"{load}.txt").write_text(summarize(raw.read_text(), title))
            if raw_dir is not None:
                raw_dir.mkdir(parents=True, exist_ok=True)
                shutil.copy(raw, raw_dir / f"{load}.collapsed.txt")
            print(f"wrote {out / f'{load}.txt'} ({run.req_per_s:,.0f} req/s while sampled)")
