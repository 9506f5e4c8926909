"""bench/wrk_runs.py reads wrk's text output right: rates, the latency distribution in any unit,
and the errors that must fail the stage (wrk prints those lines only when they occur)."""

from __future__ import annotations

import pytest
from bench.wrk_runs import parse_wrk

CLEAN = """Running 10s test @ http://127.0.0.1:8000
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.91ms    1.03ms  20.11ms   89.09%
    Req/Sec    12.85k   715.52    13.78k    80.00%
  Latency Distribution
     50%  850.00us
     75%    4.12ms
     90%    4.73ms
     99%    1.02s
  127845 requests in 10.00s, 15.85MB read
Requests/sec:  12782.27
Transfer/sec:      1.58MB
"""

REFUSED = """Running 1s test @ http://127.0.0.1:18765/nope
  1 threads and 2 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.98ms    3.09ms  28.42ms   92.91%
    Req/Sec     1.46k   353.24     1.94k    60.00%
  Latency Distribution
     50%    0.94ms
     75%    1.94ms
     90%    4.11ms
     99%   18.78ms
  1455 requests in 1.00s, 738.87KB read
  Socket errors: connect 0, read 3, write 0, timeout 7
  Non-2xx or 3xx responses: 1455
Requests/sec:   1452.61
Transfer/sec:    737.65KB
"""


def test_clean_run() -> None:
    run = parse_wrk(CLEAN)
    assert run.req_per_s == 12782.27
    assert (run.requests, run.seconds) == (127845, 10.0)
    assert (run.p50_ms, run.p75_ms, run.p90_ms, run.p99_ms) == (0.85, 4.12, 4.73, 1020.0)
    assert run.non_2xx == 0
    assert run.socket_errors == {"connect": 0, "read": 0, "write": 0, "timeout": 0}


def test_errors_are_read() -> None:
    run = parse_wrk(REFUSED)
    assert run.non_2xx == 1455
    assert run.socket_errors == {"connect": 0, "read": 3, "write": 0, "timeout": 7}
    assert run.p99_ms == 18.78


def test_output_without_a_latency_distribution_is_refused() -> None:
    # without --latency there is no p99 to report: better to fail than to report none
    without = CLEAN.replace("     99%    1.02s\n", "")
    with pytest.raises(RuntimeError, match="could not read"):
        parse_wrk(without)


def test_cpu_budget_charges_each_process_tree() -> None:
    # a child that burns CPU is charged to its group (through its parent), and a child that
    # exits in between is counted as the load generator
    import subprocess
    import sys
    import time

    from bench import cpu

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}]); input()",
        ],
        stdin=subprocess.PIPE,
    )
    try:
        before = cpu.snapshot({"service": [parent.pid]})
        time.sleep(0.05)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", burn], check=True)  # the "wrk"
        time.sleep(1.0)  # the grandchild burns 0.3 s meanwhile
        after = cpu.snapshot({"service": [parent.pid]})
        budget = cpu.budget(before, after, 1000, time.perf_counter() - started)
    finally:
        parent.communicate(b"\n", timeout=10)
    assert budget["wrk"] >= 250  # 0.3 s over 1,000 requests: 300 µs each
    assert budget["service"] >= 150  # the grandchild, though part of it may be missed at start
    assert budget["ours"] == round(budget["service"] + budget["wrk"], 1)
    assert budget["machine"] >= budget["ours"] * 0.9
