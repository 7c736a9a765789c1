# SPDX-License-Identifier: MIT
"""The one order request, from whoever decides to trade to the order manager that sends it.

A strategy (``Strategy.buy``/``sell`` → ``StrategyContext.send``), the console's order ticket
(``engine.commands.SubmitOrder``, which *is* an :class:`OrderRequest`), a portfolio sent at
once (``OrderRouter.send_many``) and the order manager (``OrderManager.send``) all speak in
these fields, by these names, as keyword arguments: no layer re-orders them. The per-order
calls take the fields as keyword-only arguments (no object is built on the hot path); a batch
or a command carries them as an :class:`OrderRequest`.
"""

from dataclasses import dataclass

from engine.enums import OrdType, Side, TimeInForce


@dataclass(frozen=True, slots=True, kw_only=True)
class OrderRequest:
    """A new order to send: what to trade, for whom, and how.

    ``strategy_id`` 0 marks a manual order. ``client_order_id`` ``None`` lets the venue
    adapter pick a ClOrdID <11> (the usual case); a chosen one must be unused today.
    ``band_override`` sends a manual order the user confirmed outside the price band (refused
    on any other order).
    """

    symbol: str
    side: Side
    qty_lots: int
    px_ticks: int = 0  # 0 for a market order
    ord_type: OrdType = OrdType.LIMIT
    time_in_force: TimeInForce = TimeInForce.DAY
    strategy_id: int = 0
    client_order_id: str | None = None
    band_override: bool = False


#: The most characters of a ClOrdID <11> a caller may choose (venues allow 20 to 64).
MAX_CLIENT_ORDER_ID = 36


def client_order_id_problem(client_order_id: str) -> str | None:
    """Return why a caller's ClOrdID cannot go to a venue, or ``None`` if it can."""
    if not client_order_id:
        return "ClOrdID <11> is empty"
    if len(client_order_id) > MAX_CLIENT_ORDER_ID:
        return (
            f"ClOrdID <11> {client_order_id[:40]!r} has {len(client_order_id)} characters "
            f"(at most {MAX_CLIENT_ORDER_ID})"
        )
    if (
        not client_order_id.isascii()
        or not client_order_id.isprintable()
        or " " in (client_order_id)
    ):
        return f"ClOrdID <11> {client_order_id!r}: only printable ASCII without spaces"
    return None
