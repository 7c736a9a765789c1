# SPDX-License-Identifier: MIT
"""Live instruments from a market-data relay, in the Analyzer (issue 22, ``docs/relay.md``).

The console's settings list the relays it watches (``[relays] watch=``, the Monitor's Relays
dock); :class:`RelaySettings` carries them, the token and the pin file to the Analyzer. The
:class:`RelaySourcePanel` (the *Relays* tab under the charts) picks one of them, lists the
instruments it carries (:func:`engine.relay.client.fetch_catalog`: symbols with their tick and
lot sizes, off the GUI thread) and charts one live: a :class:`RelayLive` runs an
:class:`analyzer.relay.RelayStream` (its own thread, loop and books; the bounded
:class:`engine.client.EventInbox` is the only thing shared) and feeds what the GUI drains to
a :class:`analyzer.views.live.LiveLink`, exactly as the console's engine feeds its own.

Every failure is one line in the panel, in red, and on the workspace's status line: no token,
relay down, TLS or pin mismatch, bad token, an instrument the relay does not carry, a link
that drops later (``down: …`` while it reconnects).
"""

import asyncio
import html
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Final

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from analyzer.live import LiveFeed
from analyzer.relay import RelayStream
from analyzer.views.jobs import Job
from analyzer.views.live import LiveChart, LiveLink
from engine.clock import LiveClock
from engine.instruments import Instrument
from engine.relay.client import fetch_catalog
from engine.relay.protocol import Catalog, InstrumentInfo
from engine.remote.tls import PinStore
from widgets.relay import thread_relay

#: How often the panel reads the streams' states, ms.
STATE_MS: Final[int] = 500
#: Seconds a relay has to list its instruments, or to send every book of a new chart.
RELAY_TIMEOUT_S: Final[float] = 10.0

_RED, _AMBER, _GREEN = "#d9534f", "#c98a1b", "#3c9a4a"


@dataclass(frozen=True, slots=True)
class RelayChoice:
    """One relay the console watches (a ``[relays] watch`` entry)."""

    name: str
    host: str
    port: int
    tls: bool = True
    fingerprint: str = ""

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """The relays the Analyzer may chart from, and how to log in to them.

    ``problems``: settings entries that could not be read (shown in the panel); ``hint``:
    where to add a relay (shown when there is none).
    """

    choices: Sequence[RelayChoice] = ()
    token: str = ""
    pins: Path | None = None
    hint: str = "the console's settings, [relays] watch=wss://host:port"
    problems: Sequence[str] = field(default_factory=tuple)


def instrument_of(info: InstrumentInfo) -> Instrument:
    """Return the instrument a catalog entry describes.

    Raises
    ------
    ValueError
        The relay did not give its tick or lot size (prices could not be shown right).
    """
    try:
        tick = Decimal(info.tick_size)
        lot = Decimal(info.lot_size or "1")
    except InvalidOperation:
        raise ValueError(
            f"{info.symbol}: the relay gives no usable tick size ({info.tick_size!r}) or lot "
            f"size ({info.lot_size!r}); set them under [[instruments]] in its relay.toml"
        ) from None
    return Instrument(symbol=info.symbol, tick_size=tick, lot_size=lot)


class RelayLive(QObject):
    """One relay stream (one instrument) feeding a :class:`LiveLink` in the GUI thread.

    The stream's wake-up posts :meth:`drain` to the GUI thread through the process's
    :func:`widgets.relay.thread_relay` (never a signal emitted from the stream's thread).
    """

    def __init__(
        self,
        choice: RelayChoice,
        instrument: Instrument,
        token: str,
        pins: PinStore | None,
        charts: Callable[[], list[LiveChart]],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.choice = choice
        self.symbol = instrument.symbol
        self.stream = RelayStream(
            choice.host,
            choice.port,
            token,
            [instrument],
            tls=choice.tls,
            pins=pins,
            name=f"relay {choice.name}",
        )
        self.link = LiveLink(
            LiveFeed(f"{choice.name} {instrument.symbol}", depth_label="relay depth"), charts, self
        )
        self._rate_mark = (0, 0)
        #: Whether the panel last showed the stream up (it reports each change once).
        self.was_up = True
        relay, me = thread_relay(), weakref.ref(self)
        self.stream.set_wakeup(lambda: relay.post(me, "drain"))

    @property
    def key(self) -> tuple[str, str]:
        """Return (relay name, symbol)."""
        return self.choice.name, self.symbol

    def rate(self, now_ns: int) -> float:
        """Return the events per second received since the previous call."""
        events = self.link.feed.events
        t0, e0 = self._rate_mark
        self._rate_mark = (now_ns, events)
        return (events - e0) / ((now_ns - t0) / 1e9) if t0 and now_ns > t0 else 0.0

    def drain(self) -> None:
        """Hand what the stream received to the live link (GUI thread)."""
        records = self.stream.drain()
        if records:
            self.link.on_events(records)

    def close(self) -> None:
        """Stop the stream (its thread ends; nothing is called back afterwards)."""
        self.stream.set_wakeup(None)
        self.stream.close(2.0)


class RelaySourcePanel(QWidget):
    """Pick a watched relay and an instrument it carries, and chart it live.

    Signals
    -------
    ready(object)
        A :class:`RelayLive` whose books all came from the relay (the workspace charts it).
    error(str)
        Something failed (one line).
    """

    ready = Signal(object)
    error = Signal(str)

    def __init__(
        self,
        settings: RelaySettings,
        charts: Callable[[], list[LiveChart]],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("analyzerRelayPanel")
        self.settings = settings
        self._charts = charts
        self.pins = PinStore(settings.pins) if settings.pins is not None else None
        self.catalogs: dict[str, Catalog] = {}
        self.lives: dict[tuple[str, str], RelayLive] = {}
        self.jobs: list[Job] = []
        self._shown = False
        self._clock = LiveClock()

        self.relay_box = QComboBox()
        self.relay_box.setObjectName("analyzerRelayBox")
        for c in settings.choices:
            self.relay_box.addItem(f"{c.name}  ·  {'wss' if c.tls else 'ws'}://{c.endpoint}", c)
        self.list_button = QPushButton("List instruments")
        self.list_button.setToolTip("Ask the relay which instruments it carries")
        self.instrument_box = QComboBox()
        self.instrument_box.setObjectName("analyzerRelayInstrument")
        self.instrument_box.setMinimumContentsLength(18)
        self.chart_button = QPushButton("Chart live")
        self.chart_button.setToolTip("Chart the instrument as the relay sends it")
        self.message = QLabel()
        self.message.setObjectName("analyzerRelayMessage")
        self.message.setWordWrap(True)
        self.streams = QLabel()
        self.streams.setObjectName("analyzerRelayStreams")
        self.streams.setWordWrap(True)

        grid = QGridLayout()
        grid.addWidget(QLabel("Relay"), 0, 0)
        grid.addWidget(self.relay_box, 0, 1)
        grid.addWidget(self.list_button, 0, 2)
        grid.addWidget(QLabel("Instrument"), 1, 0)
        grid.addWidget(self.instrument_box, 1, 1)
        grid.addWidget(self.chart_button, 1, 2)
        grid.setColumnStretch(1, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(grid)
        layout.addWidget(self.message)
        layout.addWidget(self.streams)
        layout.addStretch(1)

        self.relay_box.currentIndexChanged.connect(lambda _: self._show_catalog())
        self.list_button.clicked.connect(lambda: self.list_instruments())
        self.chart_button.clicked.connect(lambda: self.chart_selected())
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.show_states)
        self._timer.start(STATE_MS)

        if not settings.choices:
            self._say(f"No relay watched: add one in {settings.hint} (docs/relay.md).", _AMBER)
        elif not settings.token:
            self._say(
                "No relay token: set $QWCONSOLE_RELAY_TOKEN (relays/token_env) or "
                "relays/token_file in the console's settings.",
                _RED,
            )
        for p in settings.problems:
            self._say(p, _RED)
        self._enable()

    def showEvent(self, event: Any) -> None:
        """List the selected relay's instruments the first time the panel shows."""
        super().showEvent(event)
        if not self._shown:
            self._shown = True
            self._show_catalog()

    # ------------------------------------------------------------------ state
    @property
    def choice(self) -> RelayChoice | None:
        """Return the relay selected."""
        c = self.relay_box.currentData()
        return c if isinstance(c, RelayChoice) else None

    def _enable(self) -> None:
        usable = self.choice is not None and bool(self.settings.token)
        self.list_button.setEnabled(usable)
        self.chart_button.setEnabled(usable and self.instrument_box.count() > 0)

    def _say(self, text: str, color: str = "") -> None:
        style = f"color: {color};" if color else ""
        self.message.setStyleSheet(style)
        self.message.setText(text)
        self.message.setToolTip(text)

    def _fail(self, text: str) -> None:
        self._say(text, _RED)
        self.error.emit(text)

    def _show_catalog(self) -> None:
        self.instrument_box.clear()
        c = self.choice
        cat = self.catalogs.get(c.name) if c is not None else None
        if cat is not None:
            for info in cat.instruments:
                sizes = f"tick {info.tick_size or '?'} · lot {info.lot_size or '?'}"
                self.instrument_box.addItem(f"{info.symbol}   ({sizes})", info)
        self._enable()
        if c is not None and cat is None and self.settings.token:
            self.list_instruments()

    def show_states(self) -> None:
        """Show each live stream's state, event rate and freshness (GUI timer)."""
        lines = []
        now = self._clock.now_ns()
        for live in self.lives.values():
            st = live.stream.state
            if (st == "up") != live.was_up:  # say it once where the user looks: status line
                live.was_up = st == "up"
                what = f"{live.symbol} from {live.choice.name}"
                if live.was_up:
                    self._say(f"{what}: up again.", _GREEN)
                else:
                    self._fail(f"{what}: {st}; the chart stops at the last update received")
            color = _GREEN if st == "up" else _AMBER if st == "connecting" else _RED
            feed = live.link.feed
            rate = live.rate(now)
            parts = [html.escape(st)]
            if st == "up":
                parts.append(f"{rate:,.0f} events/s")
                if feed.now_ns:
                    parts.append(f"newest {max(0.0, (now - feed.now_ns) / 1e9):.1f} s ago")
            if live.stream.dropped:
                parts.append(f"{live.stream.dropped:,} records dropped (the window fell behind)")
            lines.append(
                f"<span style='color:{color}'>●</span> {html.escape(live.symbol)} from "
                f"{html.escape(live.choice.name)}: {' · '.join(parts)}"
            )
        self.streams.setText("<br>".join(lines))

    # ------------------------------------------------------------------ actions
    def list_instruments(self, then: Callable[[], object] | None = None) -> Job | None:
        """Ask the selected relay for its instruments (worker thread); fill the box.

        ``then`` is called once they are listed (not on failure).
        """
        c = self.choice
        if c is None:
            self._fail("no relay selected")
            return None
        token, pins = self.settings.token, self._pins_for(c)
        if not token:
            self._fail("no relay token (relays/token_env or relays/token_file)")
            return None
        if isinstance(pins, str):
            self._fail(pins)
            return None

        def work(_progress: Any, _token: Any) -> Catalog:
            return asyncio.run(
                fetch_catalog(
                    c.host,
                    c.port,
                    token,
                    tls=c.tls,
                    pins=pins,
                    name="qwconsole-analyzer",
                    timeout_s=RELAY_TIMEOUT_S,
                )
            )

        def done(cat: Catalog) -> None:
            self.catalogs[c.name] = cat
            if self.choice == c:
                self._show_catalog()
            self._say(f"{c.name} ({cat.relay_id}) carries {len(cat.instruments)} instruments.")
            if then is not None:
                then()

        self._say(f"Asking {c.name} ({c.endpoint}) for its instruments…")
        return self._run(Job(f"{c.name}: list instruments", work, self), done)

    def chart_selected(self) -> Job | None:
        """Chart the selected instrument of the selected relay."""
        info = self.instrument_box.currentData()
        if not isinstance(info, InstrumentInfo):
            self._fail("no instrument selected: list the relay's instruments first")
            return None
        return self.chart(info.symbol)

    def chart(self, symbol: str) -> Job | None:
        """Follow ``symbol`` on the selected relay; :attr:`ready` gives it once synchronised."""
        c = self.choice
        if c is None:
            self._fail("no relay selected")
            return None
        live = self.lives.get((c.name, symbol))
        if live is not None:
            self.ready.emit(live)
            return None
        cat = self.catalogs.get(c.name)
        if cat is None:  # its tick and lot sizes come from the catalog
            return self.list_instruments(then=lambda: self.chart(symbol))
        info = next((i for i in cat.instruments if i.symbol == symbol), None)
        if info is None:
            self._fail(f"{c.name} does not carry {symbol}")
            return None
        pins = self._pins_for(c)
        if isinstance(pins, str):
            self._fail(pins)
            return None
        try:
            instrument = instrument_of(info)
        except ValueError as e:
            self._fail(f"{c.name}: {e}")
            return None
        live = RelayLive(c, instrument, self.settings.token, pins, self._charts, self)

        def work(_progress: Any, _token: Any) -> RelayLive:
            live.stream.start(RELAY_TIMEOUT_S)  # raises RelayError with the reason
            return live

        def done(ready: RelayLive) -> None:
            self.lives[ready.key] = ready
            ready.drain()
            self._say(f"{symbol}: following it live from {c.name}.", _GREEN)
            self.show_states()
            self.ready.emit(ready)

        self._say(f"Subscribing to {symbol} on {c.name} ({c.endpoint})…")
        job = Job(f"{c.name}: chart {symbol}", work, self)
        job.failed.connect(lambda _msg: self._discard(live))
        return self._run(job, done)

    @staticmethod
    def _discard(live: RelayLive) -> None:
        live.close()
        live.deleteLater()

    def _pins_for(self, c: RelayChoice) -> PinStore | str | None:
        """Return the pin store for ``c`` (its configured fingerprint pinned), or an error."""
        if not c.tls:
            return None
        if self.pins is None:
            return f"{c.name}: no pin file for wss:// relays"
        if c.fingerprint and not self.pins.check(c.endpoint, c.fingerprint):
            return (
                f"{c.name}: {self.pins.path} pins another certificate for {c.endpoint} than "
                f"the fingerprint configured ({c.fingerprint[:11]}…)"
            )
        return self.pins

    def _run(self, job: Job, done: Callable[[Any], None]) -> Job:
        self.jobs.append(job)

        def finished(result: object) -> None:
            self.jobs.remove(job)
            done(result)

        def failed(message: str) -> None:
            self.jobs.remove(job)
            self._fail(message)

        job.finished.connect(finished)
        job.failed.connect(failed)
        return job.start()

    def close_streams(self) -> None:
        """Stop every stream (the workspace closes)."""
        for live in self.lives.values():
            live.close()
        self.lives.clear()
