"""A board's webhooks (``hooks``): which events it is told of, and at which URLs
(services/webhooks.py sends them)."""

from __future__ import annotations

from urllib.parse import urlsplit

from rankd.errors import InvalidRequest

# the events a board's hooks may name, and the longest URL
HOOK_EVENTS = ("period_closed",)
MAX_HOOK_URL = 2048


def parse_hooks(value: object, current: dict[str, str]) -> dict[str, str]:
    """``{"period_closed": "https://game.example/rankd"}``: each event's URL (null: none);
    events left out keep theirs."""
    if not isinstance(value, dict) or any(e not in HOOK_EVENTS for e in value):
        raise InvalidRequest(
            'hooks must be an object of events to URLs, e.g. {"period_closed":'
            ' "https://game.example/rankd"} (events: ' + ", ".join(HOOK_EVENTS) + ")"
        )
    hooks = dict(current)
    for event, url in value.items():
        if url is None:
            hooks.pop(event, None)
            continue
        if not isinstance(url, str) or not is_hook_url(url):
            raise InvalidRequest(
                f"hooks.{event} must be an absolute http or https URL of at most"
                f" {MAX_HOOK_URL} characters, without credentials or spaces"
            )
        hooks[event] = url
    return hooks


def is_hook_url(url: str) -> bool:
    """An absolute http(s) URL with a host, printable ASCII with no space (what a request
    line carries) and no user:password (which would be logged with it)."""
    if len(url) > MAX_HOOK_URL or not url.isascii() or not url.isprintable() or " " in url:
        return False
    try:
        parts = urlsplit(url)
        port = parts.port  # a bad port raises
    except ValueError:
        return False
    del port
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and parts.username is None
        and parts.password is None
    )
