# SPDX-License-Identifier: MIT
"""A session's settings in plain words, for the session editor (Qt-free).

:func:`schedule_preview` says whether the session is in session now, when it next logs on and
resets, and lists the next days' windows in the session's zone and the local one;
:func:`reset_explanation` says what ResetOnLogon, ResetOnLogout, ResetOnDisconnect,
SendResetSeqNumFlag, RefreshOnLogon and PersistMessages will do. Nothing here reads the clock:
the current time is a parameter.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

from engine.fix.edit.keys import DAY_NAMES
from engine.fix.schedule import SessionSchedule
from engine.fix.settings import SessionSettings

__all__ = ["reset_explanation", "schedule_preview"]

_NS = 1_000_000_000


def _zone_of(s: SessionSettings) -> tuple[dt.tzinfo, str]:
    for t in (s.start_time, s.end_time):
        if t is not None and t.zone:
            return zoneinfo.ZoneInfo(t.zone), t.zone
    if s.time_zone:
        return zoneinfo.ZoneInfo(s.time_zone), s.time_zone
    if s.use_local_time:
        local = dt.datetime.fromtimestamp(0).astimezone().tzinfo
        assert local is not None
        return local, "local time"
    return dt.UTC, "UTC"


def _fmt(ns: int, zone: dt.tzinfo) -> str:
    t = dt.datetime.fromtimestamp(ns / _NS, tz=dt.UTC).astimezone(zone)
    return t.strftime("%a %Y-%m-%d %H:%M:%S %Z")


def _short(start_ns: int, end_ns: int, zone: dt.tzinfo) -> str:
    # "Wed 12-02 08:00 → 17:00 EST", with the end's day when it differs.
    a = dt.datetime.fromtimestamp(start_ns / _NS, tz=dt.UTC).astimezone(zone)
    b = dt.datetime.fromtimestamp(end_ns / _NS, tz=dt.UTC).astimezone(zone)
    end = b.strftime("%H:%M") if a.date() == b.date() else b.strftime("%a %m-%d %H:%M")
    return f"{a:%a %m-%d %H:%M} → {end} {b:%Z}"


def _span_words(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def schedule_preview(
    s: SessionSettings, now_ns: int, local: dt.tzinfo | None = None, days: int = 7
) -> list[str]:
    """Describe a session's schedule in plain words.

    Parameters
    ----------
    s : SessionSettings
        The session.
    now_ns : int
        Current time, ns since the epoch (injected: nothing here reads the clock).
    local : tzinfo, optional
        The user's zone, shown next to the session's (default: the machine's).
    days : int
        How many days of windows to list.

    Returns
    -------
    list[str]
        Lines: kind of schedule, in session now or not, next logon and reset, the windows of the
        next ``days`` days in the session's zone and in ``local``.
    """
    local = local or dt.datetime.fromtimestamp(now_ns / _NS, tz=dt.UTC).astimezone().tzinfo
    assert local is not None
    if s.non_stop_session:
        return [
            "Non-stop session: always in session, sequence numbers never reset by the schedule."
        ]
    zone, zone_name = _zone_of(s)
    sched = SessionSchedule.from_settings(s)
    st, et = s.start_time, s.end_time
    assert st is not None
    assert et is not None
    lines: list[str] = []
    if s.start_day is not None and s.end_day is not None:
        lines.append(
            f"Weekly session from {DAY_NAMES[s.start_day - 1]} {st.time} to "
            f"{DAY_NAMES[s.end_day - 1]} {et.time} ({zone_name}); sequence numbers reset once a "
            "week."
        )
    elif st.time == et.time:
        lines.append(
            f"24-hour daily session (StartTime = EndTime = {st.time}): always in session; "
            f"sequence numbers reset when the date changes at midnight {zone_name}."
        )
    else:
        over = " (overnight: ends the next day)" if st.time > et.time else ""
        which = (
            "on " + ", ".join(DAY_NAMES[d - 1][:3] for d in sorted(s.weekdays))
            if s.weekdays
            else "every day"
        )
        lines.append(
            f"Daily session {which}, {st.time} to {et.time} {zone_name}{over}; sequence "
            "numbers reset at each start."
        )
    in_session = sched.is_in_session(now_ns)
    nxt_end = sched.next_end_ns(now_ns)
    nxt_start = sched.next_start_ns(now_ns)
    if in_session:
        until = f" until {_fmt(nxt_end, zone)}" if nxt_end is not None else ""
        lines.append(f"In session now{until}.")
    else:
        lines.append("Not in session now.")
    if nxt_start is not None:
        wait = _span_words((nxt_start - now_ns) // _NS)
        lines.append(
            f"Next reset and logon: {_fmt(nxt_start, zone)} = {_fmt(nxt_start, local)} (in {wait})."
        )
    if s.connection_type == "initiator" and (s.logon_time or s.logout_time):
        logon = SessionSchedule.from_settings(s, logon=True)
        nl = logon.next_start_ns(now_ns)
        if nl is not None:
            lines.append(f"Initiator logs on at LogonTime: next {_fmt(nl, zone)}.")
    horizon = now_ns + days * 86_400 * _NS
    windows = sched.windows(now_ns, horizon)
    if windows:
        lines.append(f"Next {days} days, {zone_name} (your time):")
        for start, end, _ in windows[:14]:
            here, there = _short(start, end, zone), _short(start, end, local)
            lines.append(f"  {here}   ({there})" if there != here else f"  {here}")
    elif not in_session:
        lines.append(f"No session window in the next {days} days.")
    return lines


def reset_explanation(s: SessionSettings) -> list[str]:
    """Say what the sequence-number and recovery settings of a session will do."""
    init = s.connection_type == "initiator"
    out: list[str] = []
    if s.reset_on_logon:
        out.append(
            "ResetOnLogon=Y: both sequence numbers go back to 1 at every logon; "
            + (
                "as an initiator we send 141=Y (ResetSeqNumFlag) in our Logon, as QuickFIX C++ "
                "does."
                if init
                else "a counterparty's Logon is answered with 141=Y."
            )
            + " Messages missed while disconnected are never resent."
        )
    else:
        out.append(
            "ResetOnLogon=N: sequence numbers continue across logons; a gap is filled by a "
            "ResendRequest."
        )
    if s.reset_on_logout:
        out.append("ResetOnLogout=Y: after a normal Logout, the next session starts at 1.")
    if s.reset_on_disconnect:
        out.append(
            "ResetOnDisconnect=Y: if the connection drops without a Logout, the next session "
            "starts at 1 (messages in flight are lost)."
        )
    if s.send_reset_seq_num_flag and not s.reset_on_logon:
        out.append("SendResetSeqNumFlag=Y: our Logon asks the counterparty to reset (141=Y).")
    if s.refresh_on_logon:
        out.append(
            "RefreshOnLogon=Y: sequence numbers and sent messages are re-read from the store at "
            "logon (hot fail-over from another process)."
        )
    if not s.persist_messages:
        out.append(
            "PersistMessages=N: sent messages are not kept; a ResendRequest is answered with "
            "a gap fill only."
        )
    if s.send_next_expected_msg_seq_num:
        out.append("SendNextExpectedMsgSeqNum=Y: our Logon carries 789 for fast recovery.")
    if not (s.reset_on_logon or s.reset_on_logout or s.reset_on_disconnect):
        out.append("Outside these, sequence numbers reset only when a new schedule window starts.")
    return out
