"""get_time — the local date, time, weekday and time zone (or those of another zone)."""

from __future__ import annotations

import os
from datetime import datetime, tzinfo
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

SCHEMA = {
    "type": "function",
    "name": "get_time",
    "description": (
        "Get the current date, time, weekday and time zone. Without arguments it gives the "
        "user's local time; pass a time zone or city to get the time there."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "timezone": {
                "type": "string",
                "description": "Optional IANA time zone or city, e.g. 'Europe/Paris' or 'Tokyo'.",
            },
        },
        "additionalProperties": False,
    },
}
TOOLSET = "core"
RISK = "read"

ANNOUNCE = "Let me check the clock."
HEARTBEAT = ["Still looking at the clock..."]
COMPLETE = "Here's the time."
FAIL = "I couldn't read the clock, sorry."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}


async def execute(args: dict, ctx) -> str:
    wanted = args.get("timezone") if isinstance(args, dict) else None
    if wanted is not None and not isinstance(wanted, str):
        return ctx.fail("The time zone should be a name like Europe/Paris.")
    if wanted and wanted.strip():
        zone = _find_zone(wanted.strip())
        if zone is None:
            return ctx.fail(
                f"I don't know a time zone called {wanted.strip()!r}; "
                "try a name like Europe/Paris or a big city like Tokyo."
            )
        now = datetime.now(zone)
        return f"In {zone.key} it is {_describe(now)}."
    now = datetime.now().astimezone()
    name = _local_zone_name()
    zone_text = f"{name}, {_offset(now)}" if name else _offset(now)
    return f"It is {_describe(now)} (time zone {zone_text})."


def _describe(now: datetime) -> str:
    return f"{now:%A}, {now.day} {now:%B %Y}, {now:%H:%M} {now.tzname()}"


def _offset(now: datetime) -> str:
    offset = now.strftime("%z") or "+0000"
    return f"UTC{offset[:3]}:{offset[3:]}"


def _local_zone_name() -> str | None:
    """The IANA name of the local zone: $TZ, then /etc/localtime's link, then /etc/timezone."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and _zone(tz) is not None:
        return tz
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        target = ""
    if "zoneinfo/" in target:
        return target.split("zoneinfo/", 1)[1]
    try:
        name = Path("/etc/timezone").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return name or None


def _zone(name: str) -> tzinfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _find_zone(wanted: str) -> ZoneInfo | None:
    """A zone by exact IANA name, or by its city part ("tokyo", "new york")."""
    zone = _zone(wanted)
    if isinstance(zone, ZoneInfo):
        return zone
    key = wanted.lower().replace(" ", "_")
    match = _zones_by_city().get(key)
    return ZoneInfo(match) if match else None


@lru_cache(maxsize=1)
def _zones_by_city() -> dict[str, str]:
    cities: dict[str, str] = {}
    for name in sorted(available_timezones()):
        cities.setdefault(name.lower(), name)
        cities.setdefault(name.rsplit("/", 1)[-1].lower(), name)
    return cities
