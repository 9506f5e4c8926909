"""The services' typed outputs (results.py) and the OpenAPI models (api/schemas.py) name the
same fields, so what mypy checks is what the document promises."""

from __future__ import annotations

from typing import get_type_hints

import pytest
from pydantic import BaseModel

from rankd import results
from rankd.api import schemas

PAIRS = [
    (results.Standing, schemas.Standing),
    (results.Entry, schemas.Entry),
    (results.FriendEntry, schemas.FriendEntry),
    (results.Top, schemas.TopOut),
    (results.ApproxStanding, schemas.PlayerOut),
    (results.Around, schemas.AroundOut),
    (results.Friends, schemas.FriendsOut),
    (results.RankOf, schemas.RankOfOut),
    (results.PeriodInfo, schemas.PeriodOut),
    (results.Periods, schemas.PeriodsOut),
    (results.Ban, schemas.BanOut),
    (results.HoldInfo, schemas.HoldOut),
    (results.Holds, schemas.HoldsOut),
    (results.HoldDecision, schemas.HoldDecisionOut),
]


@pytest.mark.parametrize(("typed", "model"), PAIRS, ids=[m.__name__ for _, m in PAIRS])
def test_typed_results_and_schemas_name_the_same_fields(
    typed: type, model: type[BaseModel]
) -> None:
    assert set(get_type_hints(typed)) == set(model.model_fields)
    optional = {name for name, f in model.model_fields.items() if not f.is_required()}
    assert optional == set(getattr(typed, "__optional_keys__", set()))
