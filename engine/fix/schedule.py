# SPDX-License-Identifier: MIT
"""Session schedules: when a FIX session runs and when its sequence numbers reset.

Semantics of QuickFIX's ``TimeRange`` (times compared in the session's zone, both ends
inclusive), expressed as *windows* — the intervals during which the session is active:

* **Daily**, ``StartTime < EndTime``: every day from StartTime to EndTime.
* **Daily overnight**, ``StartTime > EndTime``: from StartTime to EndTime the next day.
* **Daily 24 h**, ``StartTime == EndTime``: always in session; a new session (the daily reset)
  begins when the calendar date changes in the session's zone (QuickFIX compares dates here,
  whatever the StartTime).
* **Weekly**, ``StartDay``/``EndDay`` given: from StartDay StartTime to EndDay EndTime, wrapping
  over the weekend when EndDay comes before StartDay. ``StartDay == EndDay`` with
  ``EndTime > StartTime`` is a full week starting at StartTime (QuickFIX moves EndTime back to
  StartTime).
* **Weekdays** (QuickFIX/J, QuickFIX/Go): a daily schedule whose windows only *start* on the
  listed days (an overnight Sunday 22:00 → Monday 06:00 window belongs to Sunday).
* **NonStopSession**: always in session, never a new session.

The zone is the one written after StartTime/EndTime (``"08:00:00 America/New_York"``), else
``TimeZone``, else the machine's local zone with ``UseLocalTime=Y``, else UTC. Daylight-saving
changes are handled by computing each window's bounds in wall-clock time of its own date.

Two sessions are "the same" (no reset between them) when both instants fall in the same window.
For weekly sessions that wrap over a week end (e.g. Friday → Monday) this is the intended
behaviour; QuickFIX C++ compares calendar weeks there and resets mid-session, which is not
copied.

All times are int64 nanoseconds since the epoch, UTC; nothing here reads the clock.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass, field

from engine.fix.settings import SessionSettings

__all__ = ["SessionSchedule"]

_NS = 1_000_000_000
_DAY = dt.timedelta(days=1)
_UTC = dt.UTC


def _fix_day(d: dt.date) -> int:
    # 1 = Sunday … 7 = Saturday, QuickFIX's numbering.
    return (d.weekday() + 1) % 7 + 1


def _contains(window: tuple[int, int, bool], now_ns: int) -> bool:
    start, end, inclusive = window
    return start <= now_ns and (now_ns <= end if inclusive else now_ns < end)


@dataclass(frozen=True, slots=True)
class SessionSchedule:
    """When a session is active.

    Parameters
    ----------
    start_time, end_time : datetime.time or None
        Daily (or weekly) bounds; both None only for a non-stop session.
    start_day, end_day : int or None
        Weekly bounds, 1 = Sunday … 7 = Saturday.
    weekdays : frozenset[int] or None
        Days on which daily windows start.
    zone : datetime.tzinfo
        Zone the times are in.
    non_stop : bool
        Always in session, never reset.
    """

    start_time: dt.time | None
    end_time: dt.time | None
    start_day: int | None = None
    end_day: int | None = None
    weekdays: frozenset[int] | None = None
    zone: dt.tzinfo = _UTC
    non_stop: bool = False
    # Last window found: the session asks about "now" on every message, and now rarely leaves
    # the window it was in a moment ago.
    _last: list[tuple[int, int, bool]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.non_stop and (self.start_time is None or self.end_time is None):
            raise ValueError("a schedule needs StartTime and EndTime unless it is non-stop")
        if (self.start_day is None) != (self.end_day is None):
            raise ValueError("StartDay and EndDay go together")
        if self.weekdays is not None and self.start_day is not None:
            raise ValueError("Weekdays cannot be combined with StartDay/EndDay")

    @classmethod
    def from_settings(cls, settings: SessionSettings, *, logon: bool = False) -> SessionSchedule:
        """Build the schedule of a session.

        Parameters
        ----------
        settings : SessionSettings
            The session.
        logon : bool
            Build the initiator's logon window instead: LogonTime/LogoutTime and
            LogonDay/LogoutDay, each falling back to StartTime/EndTime and StartDay/EndDay.

        Raises
        ------
        ValueError
            If StartTime and EndTime name different zones.
        """
        st, et = settings.start_time, settings.end_time
        start_day, end_day = settings.start_day, settings.end_day
        if logon:
            st = settings.logon_time or st
            et = settings.logout_time or et
            start_day = settings.logon_day or start_day
            end_day = settings.logout_day or end_day
        zones = {t.zone for t in (st, et) if t is not None and t.zone}
        if len(zones) > 1:
            raise ValueError("StartTime and EndTime must use the same time zone")
        zone: dt.tzinfo
        if zones:
            zone = zoneinfo.ZoneInfo(zones.pop())
        elif settings.time_zone:
            zone = zoneinfo.ZoneInfo(settings.time_zone)
        elif settings.use_local_time:
            zone = dt.datetime(2000, 1, 1, tzinfo=_UTC).astimezone().tzinfo or _UTC
        else:
            zone = _UTC
        return cls(
            start_time=st.time if st is not None else None,
            end_time=et.time if et is not None else None,
            start_day=start_day,
            end_day=end_day,
            weekdays=frozenset(settings.weekdays) if settings.weekdays else None,
            zone=zone,
            non_stop=settings.non_stop_session,
        )

    # ------------------------------------------------------------------ windows

    def _at(self, day: dt.date, t: dt.time) -> int:
        aware = dt.datetime.combine(day, t, tzinfo=self.zone)
        return int(aware.timestamp()) * _NS

    def _date_of(self, now_ns: int) -> dt.date:
        secs, _ = divmod(now_ns, _NS)
        return dt.datetime.fromtimestamp(secs, tz=_UTC).astimezone(self.zone).date()

    def windows(self, from_ns: int, to_ns: int) -> list[tuple[int, int, bool]]:
        """Return the windows overlapping ``[from_ns, to_ns]`` in time order.

        Each is ``(start_ns, end_ns, end_inclusive)``. A non-stop schedule has none.
        """
        if self.non_stop:
            return []
        assert self.start_time is not None
        assert self.end_time is not None
        first = self._date_of(from_ns) - dt.timedelta(days=8)
        last = self._date_of(to_ns) + _DAY
        out: list[tuple[int, int, bool]] = []
        day = first
        while day <= last:
            w = self._window_starting(day)
            if w is not None and w[1] >= from_ns and w[0] <= to_ns:
                out.append(w)
            day += _DAY
        return out

    def _window_starting(self, day: dt.date) -> tuple[int, int, bool] | None:
        st, et = self.start_time, self.end_time
        assert st is not None
        assert et is not None
        if self.start_day is not None and self.end_day is not None:
            if _fix_day(day) != self.start_day:
                return None
            span = (self.end_day - self.start_day) % 7
            if span == 0:
                # Same day: a full week from StartTime (QuickFIX sets EndTime = StartTime when
                # EndTime > StartTime); EndTime < StartTime also wraps round the whole week.
                if et >= st:
                    return self._at(day, st), self._at(day + dt.timedelta(days=7), st), False
                span = 7
            return self._at(day, st), self._at(day + dt.timedelta(days=span), et), True
        if self.weekdays is not None and _fix_day(day) not in self.weekdays:
            return None
        if st < et:
            return self._at(day, st), self._at(day, et), True
        if st > et:
            return self._at(day, st), self._at(day + _DAY, et), True
        if self.weekdays is not None:
            return self._at(day, st), self._at(day + _DAY, st), False
        # 24 h daily: QuickFIX's session is the calendar date in the zone.
        midnight = dt.time(0, 0, 0)
        return self._at(day, midnight), self._at(day + _DAY, midnight), False

    def _window_of(self, now_ns: int) -> tuple[int, int, bool] | None:
        for w in self._last:
            if _contains(w, now_ns):
                return w
        for w in self.windows(now_ns, now_ns):
            if _contains(w, now_ns):
                self._last[:] = [w]
                return w
        return None

    # ------------------------------------------------------------------ queries

    def is_in_session(self, now_ns: int) -> bool:
        """Whether the session should be active at ``now_ns``."""
        return self.non_stop or self._window_of(now_ns) is not None

    def is_same_session(self, a_ns: int, b_ns: int) -> bool:
        """Whether ``a_ns`` and ``b_ns`` fall in the same window (no daily reset between)."""
        if self.non_stop:
            return True
        wa = self._window_of(a_ns)
        return wa is not None and wa == self._window_of(b_ns)

    def session_start_ns(self, now_ns: int) -> int | None:
        """Return the start of the window containing ``now_ns`` (None if outside, or non-stop)."""
        w = None if self.non_stop else self._window_of(now_ns)
        return w[0] if w is not None else None

    def next_start_ns(self, now_ns: int) -> int | None:
        """Return the first window start after ``now_ns`` (None for a non-stop session)."""
        starts = [w[0] for w in self.windows(now_ns, now_ns + 15 * 86_400 * _NS) if w[0] > now_ns]
        return min(starts) if starts else None

    def next_end_ns(self, now_ns: int) -> int | None:
        """Return the first window end after ``now_ns`` (None for a non-stop session)."""
        ends = [w[1] for w in self.windows(now_ns, now_ns + 15 * 86_400 * _NS) if w[1] > now_ns]
        return min(ends) if ends else None
