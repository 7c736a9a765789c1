# SPDX-License-Identifier: MIT
"""MDP 3.0 ``SecurityStatus`` as an instrument's trading status, for the backtester.

CME says when a market trades with ``SecurityStatus`` (template 30): for one instrument
(``SecurityID`` set) or for a whole ``SecurityGroup`` (``SecurityID`` null; every instrument
of the group, as its ``MDInstrumentDefinition*`` says). :func:`trading_status` reads them from
a decoded capture into a :class:`~engine.backtest.rules.TradingStatus` of one instrument, the
market trading only while the status is ReadyToTrade (17); a halt (2), a pre-open (21), a
pause, a cross or a close are not trading, and NoChange (103) changes nothing. The groups
come from the capture's own definitions, or from ``groups`` (SecurityID -> SecurityGroup)
when the capture has none (CME's captures often start after the definitions were sent: take
them from the instrument definition channel, or from the simulator's feed).
:func:`status_from_log` does the same for what :class:`engine.feeds.sbe.live.Mdp3Books` saw
live (its ``status_log``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from engine.backtest.rules import TradingStatus
from engine.feeds.sbe.book import first_arrivals
from engine.feeds.sbe.mdp3 import DecodedCapture

#: SecurityTradingStatus values in which the market matches orders.
TRADING = frozenset({17})  # ReadyToTrade
NO_CHANGE = 103


def _group_text(raw: object) -> str:
    if isinstance(raw, bytes):
        return raw.split(b"\0", 1)[0].decode("latin-1").strip()
    return str(raw).strip()


def definition_groups(cap: DecodedCapture) -> dict[int, str]:
    """Return SecurityID -> SecurityGroup of every instrument definition in the capture."""
    out: dict[int, str] = {}
    for t in cap.decoded.templates.values():
        desc = t.message.description or t.message.name
        if not desc.startswith("MDInstrumentDefinition") or not len(t):
            continue
        names = t.rows.dtype.names or ()
        if "SecurityID" not in names or "SecurityGroup" not in names:
            continue
        for sid, group in zip(
            t.rows["SecurityID"].tolist(), t.rows["SecurityGroup"].tolist(), strict=True
        ):
            out[int(sid)] = _group_text(group)
    return out


def trading_status(
    cap: DecodedCapture, security_id: int, *, groups: Mapping[int, str] | None = None
) -> TradingStatus:
    """Return one instrument's trading status from a capture's ``SecurityStatus`` messages.

    Parameters
    ----------
    cap
        The decoded capture (A and B copies of a packet count once).
    security_id
        The instrument.
    groups
        SecurityID -> SecurityGroup, for captures without the instruments' definitions
        (those in the capture come first).

    Raises
    ------
    ValueError
        If group-wide statuses are in the capture but the instrument's group is known from
        neither its definitions nor ``groups``.
    """
    known = dict(groups or {})
    known.update(definition_groups(cap))
    status = cap.template("SecurityStatus")
    rows = status.rows[first_arrivals(cap)[status.rows["_packet"]]]
    rows = rows[np.argsort(rows["_index"], kind="stable")]
    sid_null = status.column("SecurityID").is_null(rows["SecurityID"])
    enum = status.column("SecurityTradingStatus").enum
    group = known.get(security_id)
    by_group = np.zeros(rows.shape[0], np.bool_)
    if bool(sid_null.any()):
        if group is None:
            raise ValueError(
                f"SecurityID {security_id}: the capture has group-wide SecurityStatus messages "
                "but no definition of its SecurityGroup; give groups={security_id: 'GROUP'}"
            )
        names = np.array([_group_text(g) for g in rows["SecurityGroup"].tolist()], dtype=object)
        by_group = sid_null & (names == group)
    mine = (~sid_null & (rows["SecurityID"] == security_id)) | by_group
    code = rows["SecurityTradingStatus"].astype(np.int64)
    keep = mine & (code != NO_CHANGE)
    return _status(
        rows["TransactTime"][keep].astype(np.int64),
        code[keep],
        {int(v): k for k, v in enum.values.items()} if enum is not None else {},
    )


def status_from_log(
    log: Iterable[tuple[int, int, int]], security_id: int, names: Mapping[int, str] | None = None
) -> TradingStatus:
    """Return one instrument's trading status from ``(ts, security_id, status)`` records."""
    rec = [(t, c) for t, s, c in log if s == security_id and c != NO_CHANGE]
    rec.sort(key=lambda x: x[0])
    ts = np.array([t for t, _c in rec], np.int64)
    code = np.array([c for _t, c in rec], np.int64)
    return _status(ts, code, dict(names or {}))


def _status(ts: np.ndarray, code: np.ndarray, names: Mapping[int, str]) -> TradingStatus:
    order = np.argsort(ts, kind="stable")
    ts, code = ts[order], code[order]
    trading = np.isin(code, np.array(sorted(TRADING), np.int64))
    return TradingStatus(
        ts=ts.astype(np.int64),
        trading=trading,
        code=code.astype(np.int64),
        names=tuple(names.get(int(c), str(int(c))) for c in code.tolist()),
    )


__all__ = ["TRADING", "definition_groups", "status_from_log", "trading_status"]
