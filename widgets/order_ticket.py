# SPDX-License-Identifier: MIT
"""The order ticket: new, cancel and replace by hand, validated before anything is sent.

Checks made here (the engine checks risk again): the instrument is known, the quantity is
greater than 0 and a whole number of lots, the price is on the instrument's tick grid. What
the engine or the venue refuses is shown in the ticket: the ``CommandError.reason`` of a
refused command, or the text of an ``OrderChanged`` whose order was rejected.

The price band: the ticket knows the band the engine enforces on manual orders (from
``RiskLimitsChanged``: engine-wide, the instrument's own, manual orders') and the reference
price (the last trade, else the mid). A limit price outside the band asks first — "Buy 1 CLF7
@ 80.00 is 16.8% above the last trade 68.51 — send anyway?" — and only a confirmed order goes
out, carrying ``band_override``. A band refusal by the engine (whose reference may be newer)
asks the same way.
"""

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine.commands import (
    CancelOrder,
    Command,
    CommandError,
    CommandResult,
    ReplaceOrder,
    SubmitOrder,
)
from engine.enums import OrdStatus, OrdType, Side, TimeInForce
from engine.events import (
    BookUpdated,
    DepthChanged,
    Event,
    EventRecord,
    OrderChanged,
    OrderView,
    RiskLimitsChanged,
)
from widgets.monitor.formats import (
    ORD_TYPE_TEXT,
    SIDE_TEXT,
    STATUS_TEXT,
    TIF_TEXT,
    InstrumentFormats,
    is_working,
)

#: Strategy id of orders sent by hand.
MANUAL = 0


def _repolish(w: QWidget) -> None:
    w.style().unpolish(w)
    w.style().polish(w)


class OrderTicket(QWidget):
    """Enter, check and send orders by hand; cancel or replace the selected order.

    Parameters
    ----------
    formats : InstrumentFormats
        Known instruments and how to read prices and quantities typed for them.

    Signals
    -------
    command_requested(object)
        A checked ``SubmitOrder``, ``CancelOrder`` or ``ReplaceOrder`` to send.
    """

    #: Engine event types :meth:`on_events` reads (the workspace hands it only these).
    EVENT_TYPES: ClassVar[tuple[type[Event], ...]] = (
        BookUpdated,
        OrderChanged,
        DepthChanged,
        RiskLimitsChanged,
    )

    command_requested = Signal(object)

    def __init__(self, formats: InstrumentFormats, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("orderTicket")
        self.formats = formats
        self.order: OrderView | None = None
        self._pending: dict[int, Command] = {}
        self._touched: set[int] = set()

        self.symbol_combo = QComboBox()
        self.symbol_combo.setObjectName("ticketSymbol")
        self.symbol_combo.setPlaceholderText("no instruments yet")
        self.buy_button = QPushButton("Buy")
        self.buy_button.setObjectName("ticketBuy")
        self.sell_button = QPushButton("Sell")
        self.sell_button.setObjectName("ticketSell")
        sides = QButtonGroup(self)
        for b in (self.buy_button, self.sell_button):
            b.setCheckable(True)
            sides.addButton(b)
        self.buy_button.setChecked(True)
        side_row = QHBoxLayout()
        side_row.addWidget(self.buy_button)
        side_row.addWidget(self.sell_button)
        self.qty_edit = QLineEdit()
        self.qty_edit.setObjectName("ticketQty")
        self.qty_edit.setPlaceholderText("quantity")
        self.qty_edit.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.price_edit = QLineEdit()
        self.price_edit.setObjectName("ticketPrice")
        self.price_edit.setPlaceholderText("limit price")
        self.price_edit.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.type_combo = QComboBox()
        for t in (OrdType.LIMIT, OrdType.MARKET):
            self.type_combo.addItem(ORD_TYPE_TEXT[t], t)
        self.type_combo.currentIndexChanged.connect(self._on_type_changed)
        self.tif_combo = QComboBox()
        for tif in (TimeInForce.DAY, TimeInForce.GTC, TimeInForce.IOC, TimeInForce.FOK):
            self.tif_combo.addItem(TIF_TEXT[tif], tif)
        self.symbol_combo.currentIndexChanged.connect(self._on_symbol_changed)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # Top of book of the chosen instrument; a click copies that price into the ticket.
        self.bid_button = QPushButton()
        self.bid_button.setObjectName("ticketBid")
        self.bid_button.setToolTip("Best bid; click to use its price")
        self.ask_button = QPushButton()
        self.ask_button.setObjectName("ticketAsk")
        self.ask_button.setToolTip("Best ask; click to use its price")
        self.bid_button.clicked.connect(lambda: self._use_book_price(bid=True))
        self.ask_button.clicked.connect(lambda: self._use_book_price(bid=False))
        book_row = QHBoxLayout()
        book_row.addWidget(self.bid_button)
        book_row.addWidget(self.ask_button)
        #: Latest top of book per symbol.
        self.books: dict[str, BookUpdated] = {}
        #: Last trade price per symbol, ticks.
        self.last_trade: dict[str, int] = {}
        #: The engines' limits per scope (engine id, strategy id or None, symbol or "").
        self.limits: dict[tuple[str, int | None, str], RiskLimitsChanged] = {}
        #: The open "outside the price band" question, if any.
        self.band_dialog: QMessageBox | None = None
        form.addRow("Instrument", self.symbol_combo)
        form.addRow("Market", book_row)
        form.addRow("Side", side_row)
        form.addRow("Quantity", self.qty_edit)
        form.addRow("Price", self.price_edit)
        form.addRow("Type", self.type_combo)
        form.addRow("Time in force", self.tif_combo)
        self.submit_button = QPushButton("Send order")
        self.submit_button.setObjectName("ticketSubmit")
        self.submit_button.setDefault(True)
        self.submit_button.setToolTip("Check and send a new order (Enter)")
        self.submit_button.clicked.connect(self.submit)
        for edit in (self.qty_edit, self.price_edit):
            edit.returnPressed.connect(self.submit)

        self.order_label = QLabel()
        self.order_label.setObjectName("ticketOrder")
        self.order_label.setWordWrap(True)
        self.cancel_button = QPushButton("Cancel order")
        self.cancel_button.setObjectName("ticketCancel")
        self.cancel_button.setToolTip("Cancel the order selected in the blotter (Del)")
        self.cancel_button.clicked.connect(self.cancel)
        self.replace_button = QPushButton("Replace")
        self.replace_button.setObjectName("ticketReplace")
        self.replace_button.setToolTip(
            "Send the quantity and price above as the selected order's new values (Ctrl+R loads it)"
        )
        self.replace_button.clicked.connect(self.replace)
        order_row = QHBoxLayout()
        order_row.addWidget(self.cancel_button)
        order_row.addWidget(self.replace_button)

        self.message_label = QLabel()
        self.message_label.setObjectName("ticketMessage")
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addLayout(form)
        layout.addWidget(self.submit_button)
        layout.addSpacing(6)
        layout.addWidget(self.order_label)
        layout.addLayout(order_row)
        layout.addWidget(self.message_label)
        layout.addStretch(1)
        self.refresh_instruments()
        self._show_book()
        self.set_order(None)

    # ------------------------------------------------------------------ inputs
    @property
    def side(self) -> Side:
        """Return the chosen side."""
        return Side.BUY if self.buy_button.isChecked() else Side.SELL

    def set_side(self, side: Side) -> None:
        """Choose the side."""
        (self.buy_button if side is Side.BUY else self.sell_button).setChecked(True)

    def refresh_instruments(self) -> None:
        """Offer the known instruments, keeping the current choice."""
        current = self.symbol_combo.currentText()
        symbols = self.formats.symbols()
        if symbols == [self.symbol_combo.itemText(i) for i in range(self.symbol_combo.count())]:
            return
        self.symbol_combo.blockSignals(True)
        self.symbol_combo.clear()
        self.symbol_combo.addItems(symbols)
        if current in symbols:
            self.symbol_combo.setCurrentText(current)
        elif symbols:
            self.symbol_combo.setCurrentIndex(0)
        self.symbol_combo.blockSignals(False)
        self._on_symbol_changed()

    def set_order(self, order: OrderView | None) -> None:
        """Make ``order`` (selected in the blotter) the target of cancel and replace."""
        self.order = order
        working = order is not None and is_working(order.status, order.leaves_qty_lots)
        self.cancel_button.setEnabled(working)
        self.replace_button.setEnabled(working)
        if order is None:
            self.order_label.setText("Select an order in the blotter to cancel or replace it.")
            self.order_label.setProperty("state", "muted")
        else:
            f = self.formats
            px = (
                "MKT" if order.ord_type is OrdType.MARKET else f.price(order.symbol, order.px_ticks)
            )
            self.order_label.setText(
                f"Order {order.client_order_id}: {SIDE_TEXT[order.side]} "
                f"{f.qty(order.symbol, order.qty_lots)} {order.symbol} @ {px} — "
                f"{STATUS_TEXT.get(order.status, order.status.name)}"
            )
            self.order_label.setProperty("state", "")
        _repolish(self.order_label)

    def load_order(self, order: OrderView) -> None:
        """Select ``order`` and copy its instrument, side, quantity and price into the ticket."""
        self.set_order(order)
        f = self.formats.get(order.symbol)
        self.symbol_combo.setCurrentText(order.symbol)
        self.set_side(order.side)
        if f is not None:
            self.qty_edit.setText(f.qty(order.leaves_qty_lots or order.qty_lots).replace(",", ""))
            if order.ord_type is OrdType.LIMIT:
                self.price_edit.setText(f.price(order.px_ticks).replace(",", ""))
        self.price_edit.setFocus()

    # ------------------------------------------------------------------ commands
    def build_submit(self) -> SubmitOrder:
        """Return the checked ``SubmitOrder`` of the fields; raise ``ValueError`` if invalid."""
        symbol = self.symbol_combo.currentText()
        f = self.formats.get(symbol)
        if f is None:
            raise ValueError(
                f"unknown instrument {symbol!r}" if symbol else "choose an instrument first"
            )
        qty = f.parse_qty(self.qty_edit.text())
        ord_type = OrdType(self.type_combo.currentData())
        px = 0
        if ord_type is OrdType.LIMIT:
            px = f.parse_price(self.price_edit.text())
        return SubmitOrder(
            symbol=symbol,
            side=self.side,
            qty_lots=qty,
            px_ticks=px,
            ord_type=ord_type,
            time_in_force=TimeInForce(self.tif_combo.currentData()),
            strategy_id=MANUAL,
        )

    def build_replace(self) -> ReplaceOrder:
        """Return the checked ``ReplaceOrder`` for the selected order; raise ``ValueError``."""
        o = self.order
        if o is None or not is_working(o.status, o.leaves_qty_lots):
            raise ValueError("select a working order to replace")
        f = self.formats.get(o.symbol)
        if f is None:
            raise ValueError(f"unknown instrument {o.symbol!r}")
        qty = f.parse_qty(self.qty_edit.text()) if self.qty_edit.text().strip() else None
        px = None
        if o.ord_type is OrdType.LIMIT and self.price_edit.text().strip():
            px = f.parse_price(self.price_edit.text())
        if qty == o.qty_lots:
            qty = None
        if px == o.px_ticks:
            px = None
        if qty is None and px is None:
            raise ValueError("nothing to replace: quantity and price are unchanged")
        return ReplaceOrder(order_id=o.order_id, qty_lots=qty, px_ticks=px)

    def submit(self) -> SubmitOrder | None:
        """Check the fields and send a new order; return it, or ``None`` when not sent now.

        A limit price outside the engine's price band opens :attr:`band_dialog` instead; the
        order goes out (with ``band_override``) only if the user confirms.
        """
        try:
            command = self.build_submit()
        except ValueError as e:
            self._say(f"Not sent: {e}", "bad")
            return None
        question = self.band_question(command)
        if question is not None:
            self._ask_band(command, question)
            return None
        self._send_order(command)
        return command

    def _send_order(self, command: SubmitOrder) -> None:
        f = self.formats.get(command.symbol)
        assert f is not None  # checked by build_submit
        px = "market" if command.ord_type is OrdType.MARKET else f"@ {f.price(command.px_ticks)}"
        outside = " (outside the price band, confirmed)" if command.band_override else ""
        self._send(
            command,
            f"Sending {SIDE_TEXT[command.side].lower()} "
            f"{f.qty(command.qty_lots)} {command.symbol} {px}{outside}…",
        )

    # ------------------------------------------------------------------ price band
    def reference(self, symbol: str) -> tuple[int, str] | None:
        """Return the band's reference price in ticks and what it is (last trade, else mid)."""
        if symbol in self.last_trade:
            return self.last_trade[symbol], "the last trade"
        book = self.books.get(symbol)
        if book is not None and book.bid_qty_lots and book.ask_qty_lots:
            return (book.bid_px_ticks + book.ask_px_ticks) // 2, "the mid"
        return None

    def band_question(self, command: SubmitOrder) -> str | None:
        """Return the question to ask before sending ``command``, or ``None`` if inside the band.

        The band of a manual order is the instrument's own band if it has one, else the
        engine-wide band, and the manual orders' band if set; the narrowest refusal is asked
        about. With several engines attached (which engine trades a symbol is not known here)
        every engine's engine-wide and manual band is asked about: asking once too often is
        better than a fat finger.
        """
        if command.ord_type is not OrdType.LIMIT or command.band_override:
            return None
        ref = self.reference(command.symbol)
        f = self.formats.get(command.symbol)
        if ref is None or f is None or ref[0] <= 0:
            return None
        own = next((v for k, v in self.limits.items() if k[1:] == (None, command.symbol)), None)
        has_own = own is not None and (
            own.price_band_pct is not None or own.price_band_ticks is not None
        )
        wide = [v for k, v in self.limits.items() if k[1:] == (None, "")]
        manual = [v for k, v in self.limits.items() if k[1:] == (MANUAL, "")]
        scopes: list[tuple[RiskLimitsChanged | None, str]] = [
            *([(own, command.symbol + "'s")] if has_own else
              [(w, "the engine-wide") for w in wide]),
            *((m, "the manual orders'") for m in manual),
        ]  # fmt: skip
        px, (ref_px, what) = command.px_ticks, ref
        off = px - ref_px
        pct = off * 100.0 / ref_px
        for lim, whose in scopes:
            if lim is None:
                continue
            beyond = []
            if lim.price_band_pct is not None and abs(pct) > lim.price_band_pct:
                beyond.append(f"±{lim.price_band_pct:g}%")
            if lim.price_band_ticks is not None and abs(off) > lim.price_band_ticks:
                beyond.append(f"±{lim.price_band_ticks} ticks")
            if beyond:
                return (
                    f"{SIDE_TEXT[command.side]} {f.qty(command.qty_lots)} {command.symbol} @ "
                    f"{f.price(px)} is {abs(pct):.1f}% {'above' if off > 0 else 'below'} "
                    f"{what} {f.price(ref_px)} — send anyway?\n\nIt is outside {whose} price "
                    f"band ({' and '.join(beyond)}). Sent anyway, the order carries an "
                    "explicit override and the engine lets it through."
                )
        return None

    def _ask_band(self, command: SubmitOrder | ReplaceOrder, question: str) -> None:
        if self.band_dialog is not None:
            self.band_dialog.close()
        box = QMessageBox(self)
        box.setObjectName("ticketBandDialog")
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Outside the price band")
        head, _, detail = question.partition("\n\n")
        box.setText(head)
        box.setInformativeText(detail)
        send = box.addButton("Send anyway", QMessageBox.ButtonRole.AcceptRole)
        send.setObjectName("ticketBandSend")
        keep = box.addButton("Don't send", QMessageBox.ButtonRole.RejectRole)
        keep.setObjectName("ticketBandCancel")
        box.setDefaultButton(keep)  # Enter must not send a fat finger
        box.setEscapeButton(keep)

        def answered() -> None:
            box.finished.disconnect(answered)  # no cycle box <-> closure left for the gc
            self.band_dialog = None
            if box.clickedButton() is send:
                confirmed = replace(command, band_override=True)
                if isinstance(confirmed, SubmitOrder):
                    self._send_order(confirmed)
                else:
                    self._send_replace(confirmed)
            else:
                self._say("Not sent: the price is outside the band", "warn")
            box.deleteLater()

        box.finished.connect(answered)
        self.band_dialog = box
        self._say("Outside the price band: confirm or cancel", "warn")
        box.open()

    def cancel(self) -> CancelOrder | None:
        """Cancel the selected order; return the command, or ``None`` when there is none."""
        o = self.order
        if o is None or not is_working(o.status, o.leaves_qty_lots):
            self._say("Not sent: select a working order to cancel", "bad")
            return None
        command = CancelOrder(order_id=o.order_id)
        self._touched.add(o.order_id)
        self._send(command, f"Canceling {o.client_order_id}…")
        return command

    def replace(self) -> ReplaceOrder | None:
        """Replace the selected order with the ticket's quantity and price.

        Moving a manual order's price outside the price band asks first (:attr:`band_dialog`)
        and returns ``None``; confirmed, the ``ReplaceOrder`` carries ``band_override``.
        """
        try:
            command = self.build_replace()
        except ValueError as e:
            self._say(f"Not sent: {e}", "bad")
            return None
        o = self.order
        assert o is not None  # checked by build_replace
        if command.px_ticks is not None and o.strategy_id == MANUAL:
            probe = SubmitOrder(
                symbol=o.symbol,
                side=o.side,
                px_ticks=command.px_ticks,
                qty_lots=command.qty_lots or o.qty_lots,
            )
            question = self.band_question(probe)
            if question is not None:
                self._ask_band(command, f"Replace: {question}")
                return None
        self._send_replace(command)
        return command

    def _send_replace(self, command: ReplaceOrder) -> None:
        self._touched.add(command.order_id)
        o = self.order
        name = o.client_order_id if o is not None else f"order {command.order_id}"
        outside = " (outside the price band, confirmed)" if command.band_override else ""
        self._send(command, f"Replacing {name}{outside}…")

    def _send(self, command: Command, text: str) -> None:
        self._pending[id(command)] = command
        self._say(text, "warn")
        self.command_requested.emit(command)

    def on_command_result(self, command: Command, result: CommandResult) -> None:
        """Show the engine's answer to a command this ticket sent."""
        if self._pending.pop(id(command), None) is not command:
            return
        if isinstance(result, CommandError):
            manual = isinstance(command, SubmitOrder) or (
                isinstance(command, ReplaceOrder)
                and self.order is not None
                and self.order.order_id == command.order_id
                and self.order.strategy_id == MANUAL
            )
            if (
                isinstance(command, SubmitOrder | ReplaceOrder)
                and manual
                and not command.band_override
                and result.reason.startswith("risk: price_band: ")
            ):  # the engine's reference moved past the ticket's: ask with its numbers
                self._ask_band(
                    command,
                    f"The engine refused this order: it is outside the price band — send "
                    f"anyway?\n\n{result.reason.removeprefix('risk: price_band: ')}",
                )
                return
            self._say(f"Refused: {result.reason}", "bad")
        else:
            what = {SubmitOrder: "Order", CancelOrder: "Cancel", ReplaceOrder: "Replace"}
            name = what.get(type(command), type(command).__name__)
            self._say(
                f"{name} accepted by the engine{': ' + result.detail if result.detail else ''}",
                "ok",
            )

    def on_events(self, batch: Sequence[EventRecord]) -> None:
        """Show rejections of hand-sent orders, follow the selected order and the market."""
        book_changed = False
        for r in batch:
            ev = r.event
            if isinstance(ev, BookUpdated):
                self.books[ev.symbol] = ev
                book_changed = True
                continue
            if isinstance(ev, DepthChanged):
                if ev.last_trade_px_ticks:
                    self.last_trade[ev.symbol] = ev.last_trade_px_ticks
                continue
            if isinstance(ev, RiskLimitsChanged):
                self.limits[(ev.engine_id, ev.strategy_id, ev.symbol)] = ev
                continue
            if not isinstance(ev, OrderChanged):
                continue
            o = ev.order
            if self.order is not None and o.order_id == self.order.order_id:
                self.set_order(o)
            mine = o.strategy_id == MANUAL or o.order_id in self._touched
            if not mine:
                continue
            if o.status is OrdStatus.REJECTED:
                self._say(f"Rejected {o.client_order_id} {o.symbol}: {o.text or ev.change}", "bad")
            elif ev.change.startswith("refused"):
                self._say(
                    f"{o.client_order_id}: {ev.change}{': ' + o.text if o.text else ''}", "bad"
                )
        if book_changed:
            self._show_book()

    def _show_book(self) -> None:
        symbol = self.symbol_combo.currentText()
        book = self.books.get(symbol)
        f = self.formats
        for button, side, px, qty in (
            (
                self.bid_button,
                "Bid",
                book.bid_px_ticks if book else 0,
                book.bid_qty_lots if book else 0,
            ),
            (
                self.ask_button,
                "Ask",
                book.ask_px_ticks if book else 0,
                book.ask_qty_lots if book else 0,
            ),
        ):
            if qty:
                button.setText(f"{side} {f.price(symbol, px)} × {f.qty(symbol, qty)}")
                button.setEnabled(True)
            else:
                button.setText(f"{side} —")
                button.setEnabled(False)

    def _use_book_price(self, *, bid: bool) -> None:
        symbol = self.symbol_combo.currentText()
        book, f = self.books.get(symbol), self.formats.get(symbol)
        if book is None or f is None:
            return
        px = book.bid_px_ticks if bid else book.ask_px_ticks
        self.price_edit.setText(f.price(px).replace(",", ""))

    # ------------------------------------------------------------------ display
    def _say(self, text: str, state: str) -> None:
        self.message_label.setText(text)
        self.message_label.setProperty("state", state)
        _repolish(self.message_label)

    @property
    def message(self) -> str:
        """Return the text shown under the buttons (the last outcome)."""
        return self.message_label.text()

    def _on_type_changed(self) -> None:
        limit = self.type_combo.currentData() == OrdType.LIMIT
        self.price_edit.setEnabled(limit)

    def _on_symbol_changed(self) -> None:
        self._show_book()
        f = self.formats.get(self.symbol_combo.currentText())
        if f is None:
            self.price_edit.setToolTip("")
            return
        self.price_edit.setToolTip(f"Tick size {f.tick_size}")
        self.qty_edit.setToolTip(f"Lot size {f.lot_size}")
        self.price_edit.setPlaceholderText(f"limit price, tick {f.tick_size}")
