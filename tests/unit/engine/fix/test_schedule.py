# SPDX-License-Identifier: MIT
"""Tests for engine.fix.schedule: QuickFIX TimeRange semantics plus Weekdays and time zones."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.fix.schedule import SessionSchedule
from engine.fix.settings import parse_settings

S = 1_000_000_000
SUN, MON, TUE, WED, THU, FRI, SAT = range(1, 8)


def ns(text: str) -> int:
    """Return ns for an ISO time; naive means UTC. 2026-12-06 is a Sunday."""
    d = dt.datetime.fromisoformat(text)
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.UTC)
    return int(d.timestamp()) * S


def iso(value: int | None) -> str | None:
    if value is None:
        return None
    return dt.datetime.fromtimestamp(value // S, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def daily(start: str, end: str, **kw: object) -> SessionSchedule:
    return SessionSchedule(dt.time.fromisoformat(start), dt.time.fromisoformat(end), **kw)  # type: ignore[arg-type]


def test_daily_window_is_inclusive_at_both_ends() -> None:
    s = daily("08:00:00", "17:00:00")
    assert not s.is_in_session(ns("2026-12-07 07:59:59"))
    assert s.is_in_session(ns("2026-12-07 08:00:00"))
    assert s.is_in_session(ns("2026-12-07 17:00:00"))
    assert not s.is_in_session(ns("2026-12-07 17:00:01"))
    assert s.is_same_session(ns("2026-12-07 09:00:00"), ns("2026-12-07 16:00:00"))
    assert not s.is_same_session(ns("2026-12-07 09:00:00"), ns("2026-12-08 09:00:00"))
    assert not s.is_same_session(ns("2026-12-07 09:00:00"), ns("2026-12-07 18:00:00"))
    assert iso(s.next_start_ns(ns("2026-12-07 09:00:00"))) == "2026-12-08 08:00:00"
    assert iso(s.next_end_ns(ns("2026-12-07 09:00:00"))) == "2026-12-07 17:00:00"
    assert iso(s.session_start_ns(ns("2026-12-07 09:00:00"))) == "2026-12-07 08:00:00"
    assert s.session_start_ns(ns("2026-12-07 18:00:00")) is None


def test_overnight_window_spans_midnight() -> None:
    s = daily("22:00:00", "06:00:00")
    assert s.is_in_session(ns("2026-12-07 23:00:00"))
    assert s.is_in_session(ns("2026-12-08 05:00:00"))
    assert not s.is_in_session(ns("2026-12-08 12:00:00"))
    assert s.is_same_session(ns("2026-12-07 23:00:00"), ns("2026-12-08 05:00:00"))
    assert not s.is_same_session(ns("2026-12-08 05:00:00"), ns("2026-12-08 23:00:00"))
    assert iso(s.next_end_ns(ns("2026-12-07 23:00:00"))) == "2026-12-08 06:00:00"


def test_equal_start_and_end_is_24h_with_reset_at_date_change() -> None:
    s = daily("08:00:00", "08:00:00")
    for t in ("2026-12-07 00:00:00", "2026-12-07 08:00:00", "2026-12-07 23:59:59"):
        assert s.is_in_session(ns(t))
    # QuickFIX compares calendar dates for StartTime == EndTime.
    assert s.is_same_session(ns("2026-12-07 07:00:00"), ns("2026-12-07 09:00:00"))
    assert not s.is_same_session(ns("2026-12-07 23:00:00"), ns("2026-12-08 01:00:00"))
    assert iso(s.next_start_ns(ns("2026-12-07 09:00:00"))) == "2026-12-08 00:00:00"


def test_weekly_session_sunday_to_friday() -> None:
    s = daily("17:00:00", "17:00:00", start_day=SUN, end_day=FRI)
    assert not s.is_in_session(ns("2026-12-06 16:59:59"))  # Sunday
    assert s.is_in_session(ns("2026-12-06 17:00:00"))
    assert s.is_in_session(ns("2026-12-09 03:00:00"))  # Wednesday
    assert s.is_in_session(ns("2026-12-11 17:00:00"))  # Friday, inclusive end
    assert not s.is_in_session(ns("2026-12-11 17:00:01"))
    assert not s.is_in_session(ns("2026-12-12 12:00:00"))  # Saturday
    assert s.is_same_session(ns("2026-12-06 18:00:00"), ns("2026-12-11 16:00:00"))
    assert not s.is_same_session(ns("2026-12-11 16:00:00"), ns("2026-12-13 18:00:00"))
    assert iso(s.next_start_ns(ns("2026-12-12 12:00:00"))) == "2026-12-13 17:00:00"
    assert iso(s.next_end_ns(ns("2026-12-12 12:00:00"))) == "2026-12-18 17:00:00"


def test_weekly_session_wrapping_over_the_weekend() -> None:
    s = daily("08:00:00", "17:00:00", start_day=FRI, end_day=MON)
    assert s.is_in_session(ns("2026-12-12 12:00:00"))  # Saturday
    assert s.is_in_session(ns("2026-12-07 17:00:00"))  # Monday end
    assert not s.is_in_session(ns("2026-12-08 12:00:00"))  # Tuesday
    assert not s.is_in_session(ns("2026-12-11 07:59:59"))
    assert s.is_same_session(ns("2026-12-11 09:00:00"), ns("2026-12-14 10:00:00"))


def test_weekly_same_day_with_end_after_start_is_a_full_week() -> None:
    s = daily("08:00:00", "09:00:00", start_day=MON, end_day=MON)
    for t in ("2026-12-07 08:00:00", "2026-12-09 00:00:00", "2026-12-14 07:59:59"):
        assert s.is_in_session(ns(t))
    assert not s.is_same_session(ns("2026-12-14 07:59:59"), ns("2026-12-14 08:00:00"))
    assert s.is_same_session(ns("2026-12-07 08:00:00"), ns("2026-12-14 07:00:00"))


def test_weekly_same_day_with_end_before_start_has_a_gap() -> None:
    s = daily("09:00:00", "08:00:00", start_day=MON, end_day=MON)
    assert not s.is_in_session(ns("2026-12-07 08:30:00"))
    assert s.is_in_session(ns("2026-12-07 07:30:00"))
    assert s.is_in_session(ns("2026-12-07 09:30:00"))
    assert s.is_in_session(ns("2026-12-10 09:30:00"))


def test_weekdays_only_on_listed_days() -> None:
    s = daily("08:00:00", "17:00:00", weekdays=frozenset({MON, TUE, WED, THU, FRI}))
    assert s.is_in_session(ns("2026-12-07 12:00:00"))  # Monday
    assert not s.is_in_session(ns("2026-12-12 12:00:00"))  # Saturday
    assert iso(s.next_start_ns(ns("2026-12-11 18:00:00"))) == "2026-12-14 08:00:00"


def test_weekdays_overnight_window_belongs_to_its_start_day() -> None:
    s = daily("22:00:00", "06:00:00", weekdays=frozenset({SUN, MON, TUE, WED, THU}))
    assert s.is_in_session(ns("2026-12-06 23:00:00"))  # Sunday night
    assert s.is_in_session(ns("2026-12-11 05:00:00"))  # Friday morning, Thursday's window
    assert not s.is_in_session(ns("2026-12-11 23:00:00"))  # Friday night
    assert not s.is_in_session(ns("2026-12-06 05:00:00"))  # Sunday morning (Saturday's)


def test_weekdays_24h_window_resets_at_start_time() -> None:
    s = daily("17:00:00", "17:00:00", weekdays=frozenset({SUN, MON}))
    assert s.is_in_session(ns("2026-12-07 16:00:00"))
    assert not s.is_same_session(ns("2026-12-07 16:00:00"), ns("2026-12-07 17:00:00"))
    assert not s.is_in_session(ns("2026-12-08 17:00:00"))  # Tuesday's window is off


def test_time_zone_follows_daylight_saving() -> None:
    ny = zoneinfo.ZoneInfo("America/New_York")
    s = daily("09:30:00", "16:00:00", zone=ny)
    assert s.is_in_session(ns("2026-01-05 14:30:00"))  # EST, UTC-5
    assert not s.is_in_session(ns("2026-01-05 14:29:59"))
    assert s.is_in_session(ns("2026-07-06 13:30:00"))  # EDT, UTC-4
    assert not s.is_in_session(ns("2026-07-06 13:29:59"))
    assert iso(s.next_start_ns(ns("2026-07-06 21:00:00"))) == "2026-07-07 13:30:00"


def test_non_stop_session() -> None:
    s = SessionSchedule(None, None, non_stop=True)
    assert s.is_in_session(0)
    assert s.is_same_session(0, 10**18)
    assert s.next_start_ns(0) is None
    assert s.next_end_ns(0) is None
    assert s.windows(0, 10**18) == []


def test_invalid_schedules_raise() -> None:
    with pytest.raises(ValueError, match="StartTime"):
        SessionSchedule(None, dt.time(1))
    with pytest.raises(ValueError, match="go together"):
        daily("01:00:00", "02:00:00", start_day=MON)
    with pytest.raises(ValueError, match="Weekdays"):
        daily("01:00:00", "02:00:00", start_day=MON, end_day=FRI, weekdays=frozenset({MON}))


BASE = """[DEFAULT]
ConnectionType=acceptor
SocketAcceptPort=5001
[SESSION]
BeginString=FIX.4.4
SenderCompID=A
TargetCompID=B
"""


def test_from_settings_time_zone_and_weekdays() -> None:
    text = BASE + "StartTime=09:30:00\nEndTime=16:00:00\nTimeZone=America/New_York\nWeekdays=Mon\n"
    s = SessionSchedule.from_settings(parse_settings(text).sessions[0])
    assert s.weekdays == frozenset({MON})
    assert s.is_in_session(ns("2026-12-07 15:00:00"))
    assert not s.is_in_session(ns("2026-12-08 15:00:00"))


def test_from_settings_zone_written_after_the_time_wins() -> None:
    text = BASE + "StartTime=09:00:00 Asia/Tokyo\nEndTime=15:00:00 Asia/Tokyo\nTimeZone=UTC\n"
    s = SessionSchedule.from_settings(parse_settings(text).sessions[0])
    assert s.is_in_session(ns("2026-12-07 00:00:00"))  # 09:00 JST
    assert not s.is_in_session(ns("2026-12-07 07:00:00"))
    bad = BASE + "StartTime=09:00:00 Asia/Tokyo\nEndTime=15:00:00 UTC\n"
    with pytest.raises(ValueError, match="same time zone"):
        SessionSchedule.from_settings(parse_settings(bad).sessions[0])


def test_from_settings_weekly_non_stop_and_local_time() -> None:
    weekly = BASE + "StartTime=17:00:00\nEndTime=17:00:00\nStartDay=Sunday\nEndDay=Fri\n"
    s = SessionSchedule.from_settings(parse_settings(weekly).sessions[0])
    assert (s.start_day, s.end_day) == (SUN, FRI)
    assert SessionSchedule.from_settings(
        parse_settings(BASE + "NonStopSession=Y\n").sessions[0]
    ).non_stop
    local = BASE + "StartTime=00:00:00\nEndTime=00:00:00\nUseLocalTime=Y\n"
    s = SessionSchedule.from_settings(parse_settings(local).sessions[0])
    assert s.is_in_session(ns("2026-12-07 12:00:00"))


_times = st.times().map(lambda t: t.replace(microsecond=0))


@settings(max_examples=60, deadline=None)
@given(
    _times,
    _times,
    st.one_of(st.none(), st.frozensets(st.integers(1, 7), min_size=1)),
    st.integers(ns("2020-01-01 00:00:00") // S, ns("2030-01-01 00:00:00") // S),
)
def test_next_start_and_end_are_consistent(
    start: dt.time, end: dt.time, weekdays: frozenset[int] | None, now_s: int
) -> None:
    s = SessionSchedule(start, end, weekdays=weekdays)
    now = now_s * S
    nxt = s.next_start_ns(now)
    assert nxt is not None
    assert nxt > now
    assert s.is_in_session(nxt)
    end_ns = s.next_end_ns(now)
    assert end_ns is not None
    assert end_ns > now
    if start != end and s.is_same_session(now, now + S):
        # Not at the very end of the window: the next end closes this same window.
        assert s.is_same_session(now, end_ns)
        assert s.session_start_ns(now) is not None


def test_from_settings_logon_window_uses_logon_and_logout_times() -> None:
    text = BASE + "StartTime=08:00:00\nEndTime=17:00:00\nLogonTime=08:30:00\nLogoutTime=16:30:00\n"
    settings_ = parse_settings(text).sessions[0]
    session = SessionSchedule.from_settings(settings_)
    logon = SessionSchedule.from_settings(settings_, logon=True)
    assert session.is_in_session(ns("2026-12-07 08:10:00"))
    assert not logon.is_in_session(ns("2026-12-07 08:10:00"))
    assert logon.is_in_session(ns("2026-12-07 08:30:00"))
    assert iso(logon.next_end_ns(ns("2026-12-07 09:00:00"))) == "2026-12-07 16:30:00"
