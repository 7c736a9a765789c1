# SPDX-License-Identifier: MIT
"""The simulator's market as Nasdaq TotalView-ITCH 5.0 messages (issue 20).

:class:`SimItchFeed` watches every command the :class:`~engine.sim.exchange.SimExchange`
matches (``exchange.order_feed``) and says, order by order, what changed in the book as ITCH
does: an order that rests is an Add Order <A>; a resting order that trades is an Order
Executed <E> (with a match number); one that is canceled, or canceled by self-trade
prevention, an Order Delete <D>; one reduced in place an Order Cancel <X>; one whose price
changes or whose size grows (it loses its place) an Order Replace <U> under a new order
reference number. Aggressive orders appear only through the executions of the orders they
hit, and through an Add Order for what is left of them, as on Nasdaq.

The feed starts with a System Event <S> ``O`` (start of messages) and a Stock Directory <R>
per instrument (its locate is its book's index + 1); :meth:`SimItchFeed.take` hands out the
messages made since the last call, for :class:`engine.feeds.multicast.MoldPublisher` to
number and send. Prices are the instrument's ticks in ITCH's 4 implied decimals (a tick that
is not a multiple of 0.0001 is refused at construction), quantities are lots as shares, and
timestamps are nanoseconds since midnight UTC of the exchange's clock.

A test replays the messages into :class:`engine.feeds.itch.book.ItchBooks` and finds every
book equal to the matcher's own depth.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from engine.feeds.itch.messages import ALPHA, LAYOUTS, PRICE, TIME, UINT

if TYPE_CHECKING:
    from engine.sim.exchange import SimExchange

_DAY_NS = 86_400_000_000_000
_PRICE_UNITS = Decimal("0.0001")


def encode_message(msg_type: str, **fields: Any) -> bytes:
    """Return the wire bytes of an ITCH 5.0 message (type byte first; absent fields are 0).

    Texts (``Alpha``) are space-padded; ``Price(4)`` fields are the integer 4-decimal form.

    Raises
    ------
    ValueError
        If a field does not fit (a text too long, a number out of range) or is not a field of
        the type.
    """
    layout = LAYOUTS[msg_type]
    names = {f.name for f in layout}
    unknown = set(fields) - names
    if unknown:
        raise ValueError(f"ITCH {msg_type}: no field {sorted(unknown)}")
    out = [msg_type.encode()]
    for f in layout:
        v = fields.get(f.name, 0 if f.kind != ALPHA else "")
        if f.kind == ALPHA:
            raw = v.encode("ascii") if isinstance(v, str) else bytes(v)
            if len(raw) > f.size:
                raise ValueError(f"ITCH {msg_type}.{f.name}: {v!r} is longer than {f.size}")
            out.append(raw.ljust(f.size))
        elif f.kind in (UINT, PRICE, TIME):
            try:
                out.append(int(v).to_bytes(f.size, "big"))
            except OverflowError:
                raise ValueError(f"ITCH {msg_type}.{f.name}: {v} does not fit") from None
        else:  # pragma: no cover - the layouts know no other kind
            raise ValueError(f"ITCH {msg_type}.{f.name}: unknown kind {f.kind!r}")
    return b"".join(out)


class SimItchFeed:
    """Turn a simulator's matched commands into ITCH 5.0 messages (see the module)."""

    def __init__(self, exchange: SimExchange, ts: int) -> None:
        self.exchange = exchange
        self._messages: list[bytes] = []
        #: order id -> (order reference number, side, px_ticks, leaves, locate), as published.
        self._published: dict[int, tuple[int, int, int, int, int]] = {}
        self._next_ref = 1
        self._match = 1
        self._scale: dict[int, int] = {}  # locate -> ITCH price units per tick
        self.messages_made = 0
        self._add("S", ts, 0, event_code="O")
        for book in exchange.books.values():
            tick = book.listing.instrument.tick_size
            units = Decimal(tick) / _PRICE_UNITS
            if units != units.to_integral_value() or units <= 0:
                raise ValueError(
                    f"{book.symbol}: tick size {tick} is not a multiple of ITCH's 0.0001"
                )
            locate = book.index + 1
            self._scale[locate] = int(units)
            self._add(
                "R",
                ts,
                locate,
                stock=book.symbol[:8],
                market_category="Q",
                financial_status_indicator="N",
                round_lot_size=1,
                round_lots_only="N",
                issue_classification="C",
                issue_sub_type="Z",
                authenticity="P",
                short_sale_threshold_indicator="N",
                ipo_flag="N",
                etp_flag="N",
                luld_reference_price_tier="1",
                inverse_indicator="N",
            )
            self._add("H", ts, locate, stock=book.symbol[:8], trading_state="T")

    def _add(self, t: str, ts: int, locate: int, **fields: Any) -> None:
        self._messages.append(
            encode_message(t, stock_locate=locate, timestamp=ts % _DAY_NS, **fields)
        )
        self.messages_made += 1

    def take(self) -> list[bytes]:
        """Return the messages made since the last call (each once)."""
        out, self._messages = self._messages, []
        return out

    def put_back(self, messages: list[bytes]) -> None:
        """Keep ``messages`` (taken, not sent) ahead of the ones made since."""
        self._messages[:0] = messages

    # ------------------------------------------------------------------ the exchange's hook
    def on_command(self, locate: int, ts: int, oid: int, events: Sequence[Sequence[int]]) -> None:
        """Publish what one matched command changed (called by the exchange after it)."""
        from engine.matching.matcher import EV_KIND, EV_LIQUIDITY, EV_ORDER_ID, EV_QTY
        from engine.types import EXEC_TRADE, LIQ_MAKER

        published = self._published
        touched = [oid]
        for ev in events:
            order_id = int(ev[EV_ORDER_ID])
            if order_id != oid:
                touched.append(order_id)
            if ev[EV_KIND] == EXEC_TRADE and ev[EV_LIQUIDITY] == LIQ_MAKER:
                pub = published.get(order_id)
                if pub is None:  # a maker the feed never showed (cannot happen: logged)
                    continue
                ref, side, px, leaves, loc = pub
                qty = int(ev[EV_QTY])
                self._add(
                    "E",
                    ts,
                    loc,
                    order_reference_number=ref,
                    executed_shares=qty,
                    match_number=self._match,
                )
                self._match += 1
                if leaves - qty > 0:
                    published[order_id] = (ref, side, px, leaves - qty, loc)
                else:
                    del published[order_id]
        seen: set[int] = set()
        for order_id in touched:
            if order_id not in seen:
                seen.add(order_id)
                self._reconcile(order_id, locate, ts)

    def _reconcile(self, order_id: int, locate: int, ts: int) -> None:
        pub = self._published.get(order_id)
        now = self.exchange.resting(order_id)
        if now is None:
            if pub is not None:
                self._add("D", ts, pub[4], order_reference_number=pub[0])
                del self._published[order_id]
            return
        side, px, leaves = now
        scale = self._scale[locate]
        if pub is None:
            ref = self._new_ref()
            self._add(
                "A",
                ts,
                locate,
                order_reference_number=ref,
                buy_sell_indicator="B" if side > 0 else "S",
                shares=leaves,
                stock=self.exchange.symbol_of(locate - 1)[:8],
                price=px * scale,
            )
            self._published[order_id] = (ref, side, px, leaves, locate)
            return
        ref, _side, old_px, old_leaves, _loc = pub
        if px == old_px and leaves == old_leaves:
            return
        if px == old_px and leaves < old_leaves:  # reduced in place: keeps its priority
            self._add(
                "X", ts, locate, order_reference_number=ref, cancelled_shares=old_leaves - leaves
            )
            self._published[order_id] = (ref, side, px, leaves, locate)
            return
        new = self._new_ref()
        self._add(
            "U",
            ts,
            locate,
            original_order_reference_number=ref,
            new_order_reference_number=new,
            shares=leaves,
            price=px * scale,
        )
        self._published[order_id] = (new, side, px, leaves, locate)

    def _new_ref(self) -> int:
        ref = self._next_ref
        self._next_ref += 1
        return ref


__all__ = ["SimItchFeed", "encode_message"]
