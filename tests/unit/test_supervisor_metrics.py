"""The supervisor's give-ups as metrics (health.Health._note_supervisor reads its status
file): 1 for a server it no longer restarts, its restarts counted; 0 with no supervisor."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from rankd import metrics
from rankd.health import Health


def values(server: str) -> tuple[float, float]:
    return (
        metrics.EMBEDDED_GAVE_UP.labels(server)._value.get(),
        metrics.EMBEDDED_RESTARTS.labels(server)._value.get(),
    )


def test_a_server_given_up_is_1_and_the_others_0(tmp_path: Path) -> None:
    status = tmp_path / "supervisor.json"
    status.write_text(
        json.dumps(
            {
                "redis": {"state": "failed", "restarts": 4},
                "nats": {"state": "running", "restarts": 1},
            }
        )
    )
    health = SimpleNamespace(settings=SimpleNamespace(embedded_status_file=status))
    Health._note_supervisor(health)  # type: ignore[arg-type]
    assert values("redis") == (1, 4)
    assert values("nats") == (0, 1)
    assert values("postgres") == (0, 0)
    # the operator's own servers: nothing given up
    Health._note_supervisor(SimpleNamespace(settings=SimpleNamespace(embedded_status_file=None)))  # type: ignore[arg-type]
    assert values("redis") == (0, 0)
