"""The Grafana dashboard (deploy/grafana/rankd-dashboard.json) is a dashboard Grafana loads
(panels on a 24-column grid, each with PromQL targets on the Prometheus data source
variable), it shows every metric the alert rules watch, and every metric its queries name is
one a live service exports on /metrics: a renamed metric fails here, not on a dark panel.
With promtool installed, Prometheus's own parser reads every query too.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml  # type: ignore[import-untyped]  # (pyyaml comes with uvicorn[standard])

from tests.support.common import SERVER_H, MakeBoard

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "rankd-dashboard.json"
RULES = DEPLOY / "prometheus" / "rankd-alerts.yml"
METRIC = re.compile(r"\brankd_[a-z_]+")
PROMTOOL = shutil.which("promtool")


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels() -> list[dict[str, Any]]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def queries() -> list[str]:
    return [target["expr"] for panel in panels() for target in panel["targets"]]


def named_in(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in METRIC.findall(expr)}


def test_the_file_is_a_dashboard_of_panels_with_targets() -> None:
    board = dashboard()
    assert board["title"] and board["uid"] and isinstance(board["schemaVersion"], int)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    assert len(panels()) >= 10
    for panel in panels():
        where = panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("h", "w", "x", "y")), where
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, where
        assert panel["type"] in ("timeseries", "stat", "gauge", "table"), where
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, where
        assert panel["targets"], f"{where}: no targets"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), where
        for target in panel["targets"]:
            assert METRIC.search(target["expr"]), (where, target["expr"])
            used = set(re.findall(r"\$(\w+)", target["expr"]))
            assert used <= set(variables), (where, used)


def test_it_shows_every_metric_the_alert_rules_watch() -> None:
    document = yaml.safe_load(RULES.read_text())
    alerting = [rule["expr"] for group in document["groups"] for rule in group["rules"]]
    assert named_in(alerting) <= named_in(queries()), named_in(alerting) - named_in(queries())


async def test_every_metric_it_names_is_on_a_live_services_metrics(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    """After a submit (single and batch) and reads, so the labelled series exist."""
    board = await make_board(windows=["all-time"])
    run = {"run_id": "dash-1", "player_id": "p-dash", "score": 10}
    assert (await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)).is_success
    batch = {"runs": [{"run_id": "dash-2", "player_id": "p-dash-2", "score": 5}]}
    sent = await client.post(f"/v1/boards/{board}/runs:batch", json=batch, headers=SERVER_H)
    assert sent.is_success, sent.text
    assert (await client.get(f"/v1/boards/{board}/top")).status_code == 200
    assert (await client.get(f"/v1/boards/{board}/players/p-dash")).status_code == 200
    wanted = named_in(queries())
    deadline = time.monotonic() + 15  # the health watch and lag gauges refresh on their own
    while True:
        text = (await client.get("/metrics")).text
        exported = {
            line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"
        }
        if wanted <= exported or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert wanted <= exported, f"not on /metrics: {sorted(wanted - exported)}"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")
def test_prometheus_parses_every_query(tmp_path: Path) -> None:
    """Each query as a recording rule: `promtool check rules` parses it (offline)."""
    rules = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(queries())]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert PROMTOOL is not None
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(rules)} rules found" in checked.stdout
