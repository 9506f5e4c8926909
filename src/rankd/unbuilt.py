"""What CONTRACT.md v1.3 names and this version does not build yet, in one place.

Each is refused with a sentence saying so (400 for a field or parameter, 501 for a route),
never accepted and silently skipped. Building one means deleting it here.
"""

from __future__ import annotations

from rankd.errors import InvalidRequest

# board fields (PUT /v1/boards/{board_id})
BOARD_FIELDS = frozenset(
    {
        "league",
    }
)
WINDOWS: frozenset[str] = frozenset()
POLICIES: frozenset[str] = frozenset()
# (method, path) of the routes
ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/v1/boards/{board_id}/players/{player_id}/league"),
    ("GET", "/v1/boards/{board_id}/cohorts/{cohort}"),
    ("GET", "/v1/players/{player_id}/leagues"),
)


def not_built(what: str) -> InvalidRequest:
    return InvalidRequest(f"{what} is not built in this version of Rankd yet (CONTRACT v1.3)")


def refuse_fields(given: object, names: frozenset[str], kind: str) -> None:
    """400 naming the first v1.3 field ``given`` (a dict's keys) holds that is not built."""
    if isinstance(given, dict):
        for name in sorted(names & set(given)):
            raise not_built(f"the {kind} field {name!r}")
