"""The time tools: the current date and time in a zone, and conversion between zones.

Zones are IANA names only. Abbreviations are refused with the IANA name to use, even the
few (EST, CET...) that the tz database still carries as fixed-offset legacy zones: "EST" in
July almost always means New York's EDT, and silently answering for UTC-05:00 would be wrong.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from aimu.tools.decorator import tool

_ABBREVIATIONS = {
    "PST": "America/Los_Angeles", "PDT": "America/Los_Angeles", "PT": "America/Los_Angeles",
    "PST8PDT": "America/Los_Angeles",
    "MST": "America/Denver", "MDT": "America/Denver", "MT": "America/Denver",
    "MST7MDT": "America/Denver",
    "CST": "America/Chicago", "CDT": "America/Chicago", "CT": "America/Chicago",
    "CST6CDT": "America/Chicago",
    "EST": "America/New_York", "EDT": "America/New_York", "ET": "America/New_York",
    "EST5EDT": "America/New_York",
    "AKST": "America/Anchorage", "AKDT": "America/Anchorage", "HST": "Pacific/Honolulu",
    "AST": "America/Halifax", "ADT": "America/Halifax", "NST": "America/St_Johns",
    "BST": "Europe/London", "IST": "Asia/Kolkata (or Europe/Dublin)",
    "WET": "Europe/Lisbon", "WEST": "Europe/Lisbon",
    "CET": "Europe/Paris", "CEST": "Europe/Paris", "MET": "Europe/Paris",
    "EET": "Europe/Athens", "EEST": "Europe/Athens", "MSK": "Europe/Moscow",
    "JST": "Asia/Tokyo", "KST": "Asia/Seoul", "SGT": "Asia/Singapore", "HKT": "Asia/Hong_Kong",
    "AEST": "Australia/Sydney", "AEDT": "Australia/Sydney", "ACST": "Australia/Adelaide",
    "AWST": "Australia/Perth", "NZST": "Pacific/Auckland", "NZDT": "Pacific/Auckland",
}  # fmt: skip
_TIME_ONLY = re.compile(r"^\d{1,2}(:\d{2}){0,2}\s*([ap]\.?m\.?)?$", re.IGNORECASE)
_MERIDIEM = re.compile(r"\s*([ap])\.?\s*m\.?$", re.IGNORECASE)
_NOW_HINT = "For the current date and time, call get_current_date_and_time instead."
_FORMATS = (
    "%Y-%m-%d %I:%M:%S %p",
    "%Y-%m-%d %I:%M %p",
    "%Y-%m-%d %I %p",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
)


class TimeInputError(ValueError):
    """A zone or a date-time the time tools cannot use; the message says what to send."""


@tool(read_only=True)
def get_current_date_and_time(timezone: str | None = None) -> str:
    """Returns the current date and time, with its UTC offset and timezone.

    The answer reads like "2026-11-30T14:05:09+01:00 (Monday, CET, Europe/Berlin); UTC:
    2026-11-30T13:05:09Z", the same instant in UTC at the end.

    Args:
        timezone: IANA timezone name (e.g. "Asia/Tokyo", "America/New_York") to report the
            time in, not an abbreviation like "PST". Omit for the local timezone.
    """
    try:
        zone, name = _zone(timezone) if timezone else _local_zone()
    except TimeInputError as exc:
        return f"Error: {exc}"
    now = datetime.now(zone).replace(microsecond=0)
    return f"{_describe(now, name)}; UTC: {_utc(now)}"


@tool(read_only=True)
def convert_time(datetime_str: str, from_timezone: str, to_timezone: str) -> str:
    """Converts a date and time from one timezone to another.

    Both timezones must be IANA names ("America/Los_Angeles"), not abbreviations ("PST") or
    spoken names ("Pacific Time"). Example call: convert_time("2026-08-11T05:00:00",
    "America/Los_Angeles", "Europe/Zurich").

    Handles daylight saving time, and flags times that a DST transition makes nonexistent
    (skipped when clocks go forward) or ambiguous (repeated when they go back), giving every
    possible reading.

    Args:
        datetime_str: Date and time, ISO 8601 preferred (e.g. "2026-11-02T15:00:00"). A
            12-hour clock and an unpadded hour are also accepted ("2026-11-02 3:00 PM"). The
            date is required. If the time already carries a UTC offset
            ("2026-11-02T15:00:00-05:00"), that offset is used and from_timezone is ignored.
        from_timezone: IANA timezone name the time is given in (e.g. "Europe/Berlin").
        to_timezone: IANA timezone name to convert to (e.g. "America/Denver").
    """
    try:
        target, target_name = _zone(to_timezone)
        moment = _parse(datetime_str)
        if moment.tzinfo is not None:
            converted = _describe(moment.astimezone(target), target_name)
            return (
                f"{_describe(moment)} = {converted} "
                "(the UTC offset in the input was used; from_timezone was ignored)"
            )
        source, source_name = _zone(from_timezone)
    except TimeInputError as exc:
        return f"Error: {exc}"
    return _convert_wall_time(moment, source, source_name, target, target_name)


def _convert_wall_time(
    wall: datetime, source: tzinfo, source_name: str, target: tzinfo, target_name: str
) -> str:
    first, second = wall.replace(tzinfo=source, fold=0), wall.replace(tzinfo=source, fold=1)

    def line(moment: datetime) -> str:
        converted = _describe(moment.astimezone(target), target_name)
        return f"{_describe(moment, source_name)} = {converted}"

    if first.utcoffset() == second.utcoffset():
        return line(first)
    shown = wall.isoformat(timespec="seconds")
    if first.astimezone(UTC).astimezone(source).replace(tzinfo=None) == wall:
        return "\n".join([
            f"Ambiguous: {shown} happens twice in {source_name} (clocks go back that night).",
            f"First occurrence: {line(first)}",
            f"Second occurrence: {line(second)}",
            "Say which one is meant, or give the time with its UTC offset.",
        ])  # fmt: skip
    return "\n".join([
        f"Nonexistent: {shown} never happens in {source_name}: clocks skip over it "
        f"(from UTC{_offset(first)} to UTC{_offset(second)}).",
        f"Read with the offset before the change: {line(first)}",
        f"Read with the offset after the change: {line(second)}",
    ])  # fmt: skip


def _parse(text: str) -> datetime:
    raw = text.strip()
    if not raw:
        raise TimeInputError(f"datetime_str is empty; send e.g. '2026-11-02T15:00:00'. {_NOW_HINT}")
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        pass
    if _TIME_ONLY.match(raw):
        raise TimeInputError(
            f"'{raw}' has no date; include it, e.g. '2026-11-02 {raw}' (YYYY-MM-DD first). "
            + _NOW_HINT
        )
    normal = re.sub(r"^(\d{4}-\d{1,2}-\d{1,2})[T ]\s*", r"\1 ", raw)
    normal = _MERIDIEM.sub(lambda m: f" {m.group(1).upper()}M", normal)
    for fmt in _FORMATS:
        try:
            return datetime.strptime(normal, fmt)
        except ValueError:
            continue
    raise TimeInputError(
        f"cannot read '{raw}' as a date and time; use ISO 8601 like '2026-11-02T15:00:00' "
        f"or '2026-11-02 3:00 PM'. {_NOW_HINT}"
    )


def _zone(name: str | None) -> tuple[tzinfo, str]:
    key = (name or "").strip()
    if not key:
        raise TimeInputError("a timezone is required, as an IANA name like 'Europe/Berlin'")
    if key.upper() in _ABBREVIATIONS:
        raise TimeInputError(
            f"'{key}' is an abbreviation; use an IANA timezone name instead, e.g. "
            f"'{_ABBREVIATIONS[key.upper()]}'"
        )
    key = _zone_names_lower().get(key.lower(), key)
    try:
        return ZoneInfo(key), key
    except (ZoneInfoNotFoundError, ValueError):
        pass
    close = difflib.get_close_matches(key.lower(), _zone_names_lower(), n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(_zone_names_lower()[c]) for c in close)}?"
    raise TimeInputError(
        f"unknown timezone '{key}'; use an IANA name like 'America/New_York' or "
        f"'Asia/Kolkata'.{hint if close else ''}"
    )


@functools.cache
def _zone_names_lower() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}


def _local_zone() -> tuple[tzinfo, str]:
    """The local zone, by its IANA name when the system says which one it is."""
    for name in _local_zone_names():
        try:
            return ZoneInfo(name), name
        except (ZoneInfoNotFoundError, ValueError):
            continue
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local, "local time"


def _local_zone_names() -> list[str]:
    names = [
        os.environ.get("TZ", "").lstrip(":"),
        os.path.realpath("/etc/localtime").partition("zoneinfo/")[2],
    ]
    try:
        with open("/etc/timezone", encoding="utf-8") as f:
            names.append(f.read().strip())
    except OSError:
        pass
    return [n for n in names if n and not n.startswith("/")]


def _describe(moment: datetime, zone_name: str | None = None) -> str:
    details = [moment.strftime("%A")]
    abbreviation = moment.tzname()
    if abbreviation and not abbreviation.startswith(("UTC+", "UTC-", "+", "-")):
        details.append(abbreviation)
    if zone_name:
        details.append(zone_name)
    return f"{moment.isoformat(timespec='seconds')} ({', '.join(details)})"


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _offset(moment: datetime) -> str:
    offset = moment.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
