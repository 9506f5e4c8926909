"""The alerting rules (deploy/prometheus/rankd-alerts.yml) load in Prometheus's own checker,
each alert fires in promtool's unit tests on the series that should raise it (and not
before its `for`), and every metric a rule names is one the service exports.

Skips only when no promtool is installed (Debian's `prometheus` package; `.ci/run`
installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # (pyyaml comes with uvicorn[standard])
from prometheus_client.metrics import MetricWrapperBase

from rankd import metrics

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = RULES_DIR / "rankd-alerts.yml"
RULE_TESTS = RULES_DIR / "rankd-alerts.test.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=120
    )


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


@needs_promtool
def test_promtool_loads_the_rules() -> None:
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(rules())} rules found" in checked.stdout


@needs_promtool
def test_each_alert_fires_as_its_unit_test_says() -> None:
    tested = promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_unit_test_that_sees_it_fire() -> None:
    cases = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    firing = {
        check["alertname"]
        for case in cases
        for check in case["alert_rule_test"]
        if check.get("exp_alerts")
    }
    assert {rule["alert"] for rule in rules()} == firing


def test_every_metric_a_rule_names_is_exported() -> None:
    exported: set[str] = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            name = value._name  # a counter's, without its _total
            exported |= {name, f"{name}_total", f"{name}_bucket", f"{name}_count"}
    named = {n for rule in rules() for n in re.findall(r"\brankd_[a-z_]+", rule["expr"])}
    assert named, "the rules name no metric"
    assert named <= exported, named - exported
