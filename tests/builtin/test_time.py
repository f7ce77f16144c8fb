"""get_current_date_and_time and convert_time: IANA zones only, DST gaps and overlaps."""

from datetime import UTC, datetime, timedelta

import pytest

from aimu.tools.builtin import convert_time, get_current_date_and_time


def _reported_instant(text: str) -> datetime:
    return datetime.fromisoformat(text.split(" ", 1)[0])


def test_current_time_in_a_named_zone_has_its_offset_and_name():
    out = get_current_date_and_time("Asia/Tokyo")
    moment = _reported_instant(out)
    assert moment.utcoffset() == timedelta(hours=9)
    assert "Asia/Tokyo" in out and "JST" in out
    assert abs(moment - datetime.now(UTC)) < timedelta(minutes=1)


def test_current_time_defaults_to_the_local_zone_by_its_iana_name(monkeypatch):
    monkeypatch.setenv("TZ", "America/Denver")
    out = get_current_date_and_time()
    assert "America/Denver" in out
    assert abs(_reported_instant(out) - datetime.now(UTC)) < timedelta(minutes=1)


def test_current_time_also_gives_the_same_instant_in_utc():
    out = get_current_date_and_time("Asia/Tokyo")
    local = _reported_instant(out)
    utc = datetime.fromisoformat(out.rsplit("UTC: ", 1)[1])
    assert utc.utcoffset() == timedelta(0)
    assert utc == local


def test_an_unknown_zone_is_a_correctable_error_with_suggestions():
    out = get_current_date_and_time("Europe/Berln")
    assert out.startswith("Error: unknown timezone 'Europe/Berln'")
    assert "'Europe/Berlin'" in out


def test_zone_names_are_matched_regardless_of_case():
    assert "America/New_York" in get_current_date_and_time("america/new_york")


@pytest.mark.parametrize(("abbreviation", "iana"), [("PST", "America/Los_Angeles"),
                                                    ("EST", "America/New_York"),
                                                    ("cet", "Europe/Paris")])  # fmt: skip
def test_abbreviations_are_refused_with_the_iana_form(abbreviation, iana):
    out = get_current_date_and_time(abbreviation)
    assert out.startswith("Error:") and "abbreviation" in out and iana in out


def test_conversion_in_summer():
    out = convert_time("2026-08-11T05:00:00", "America/Los_Angeles", "Europe/Zurich")
    assert out.startswith("2026-08-11T05:00:00-07:00 (Tuesday, PDT, America/Los_Angeles) = ")
    assert out.endswith("2026-08-11T14:00:00+02:00 (Tuesday, CEST, Europe/Zurich)")


@pytest.mark.parametrize(
    "text",
    ["2026-11-02 3:00 PM", "2026-11-02 3:00 pm", "2026-11-02 3 PM", "2026-11-02 3pm",
     "2026-11-02 03:00 p.m.", "2026-11-02 15:00", "2026-11-02T15:00:00", "2026-11-02 15:00:00"],
)  # fmt: skip
def test_twelve_hour_and_unpadded_hours_are_read(text):
    out = convert_time(text, "America/New_York", "UTC")
    assert out.endswith("2026-11-02T20:00:00+00:00 (Monday, UTC, UTC)")


def test_an_offset_in_the_input_wins_over_from_timezone():
    out = convert_time("2026-11-02T15:00:00-05:00", "Asia/Tokyo", "Europe/London")
    assert "2026-11-02T20:00:00+00:00" in out
    assert "from_timezone was ignored" in out


def test_a_time_without_a_date_is_refused_with_an_example():
    out = convert_time("3:00 PM", "UTC", "Asia/Tokyo")
    assert out.startswith("Error:") and "no date" in out and "2026-11-02 3:00 PM" in out
    assert "get_current_date_and_time" in out


def test_unreadable_input_names_the_expected_format():
    out = convert_time("next tuesday", "UTC", "Asia/Tokyo")
    assert out.startswith("Error:") and "ISO 8601" in out
    assert "get_current_date_and_time" in out


def test_a_time_skipped_by_spring_forward_is_flagged_with_both_readings():
    out = convert_time("2026-03-08 02:30", "America/New_York", "UTC")
    assert out.startswith("Nonexistent: 2026-03-08T02:30:00 never happens in America/New_York")
    assert "2026-03-08T07:30:00+00:00" in out and "2026-03-08T06:30:00+00:00" in out


def test_a_time_repeated_by_fall_back_is_flagged_with_both_occurrences():
    out = convert_time("2026-11-01 01:30", "America/New_York", "UTC")
    assert out.startswith("Ambiguous: 2026-11-01T01:30:00 happens twice in America/New_York")
    first, second = out.splitlines()[1:3]
    assert "-04:00" in first and first.endswith("2026-11-01T05:30:00+00:00 (Sunday, UTC, UTC)")
    assert "-05:00" in second and second.endswith("2026-11-01T06:30:00+00:00 (Sunday, UTC, UTC)")


def test_southern_hemisphere_dst_is_handled():
    out = convert_time("2026-01-15 12:00", "Australia/Sydney", "UTC")
    assert "+11:00" in out and out.endswith("2026-01-15T01:00:00+00:00 (Thursday, UTC, UTC)")


def test_abbreviation_in_either_zone_is_refused():
    assert "America/Los_Angeles" in convert_time("2026-08-11 05:00", "PST", "UTC")
    assert "America/New_York" in convert_time("2026-08-11 05:00", "UTC", "EDT")
