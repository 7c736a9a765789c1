# SPDX-License-Identifier: MIT
"""The demo that ``qwconsole`` starts with nothing configured.

A simulated exchange lists three futures; its participants move prices and trade; the market
maker example quotes all three through the engine's order manager, risk checks and position
book. Within a few seconds there are orders, fills, positions and P&L.

Over real sockets on loopback (the default): market data and the orders of two instruments go
over a FIX 4.4 session, the orders of the third (:data:`DEMO_OUCH_SYMBOLS`) over OUCH 5.0 on
SoupBinTCP, the simulator serving both ports, as a venue with a FIX and a native port would.
"""

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engine.clock import Clock
from engine.core import Component, Engine
from engine.desk import TradingDesk
from engine.events import Event
from engine.fastlog import get_log
from engine.fix.log import NullLog
from engine.fix.session import FixSession
from engine.fix.settings import SessionSettings
from engine.fix.store import FileStore, MemoryStore, MessageStore, WriteBarrier
from engine.fix.transport import SocketAcceptor, SocketInitiator
from engine.instruments import Instrument
from engine.journal.component import JournalComponent, recover_day
from engine.logfeed import LogFeed
from engine.marketdata import MarketData
from engine.oms.risk import RiskLimits
from engine.oms.venue import ExecutionReport, Venue
from engine.sim.exchange import FlowConfig, SimExchange, SimInstrument, id_epoch
from engine.sim.fix_app import SimFixApplication
from engine.sim.ouch_app import SimOuchApplication, ouch_port, ouch_session_name
from engine.strategy.examples import MarketMaker
from engine.venues.fix.adapter import FixVenue
from engine.venues.fix.feed import FixMarketData
from engine.venues.fix.link import BusLog, FixLink
from engine.venues.ouch.adapter import OuchVenue
from engine.venues.ouch.link import SoupServerListener
from engine.venues.ouch.session import OuchSession, engine_state
from engine.venues.sim.adapter import SimVenue

log = get_log(__name__)

#: The demo's market maker.
DEMO_STRATEGY_ID = 20170101

DEMO_LISTINGS = (
    SimInstrument(
        instrument=Instrument(symbol="ESZ6", tick_size=Decimal("0.25"), multiplier=Decimal(50)),
        start_px_ticks=24_000,  # 6000.00
        flow=FlowConfig(events_per_second=300, volatility_ticks=2.0),
    ),
    SimInstrument(
        instrument=Instrument(symbol="NQZ6", tick_size=Decimal("0.25"), multiplier=Decimal(20)),
        start_px_ticks=86_000,  # 21500.00
        flow=FlowConfig(events_per_second=250, volatility_ticks=4.0),
    ),
    SimInstrument(
        instrument=Instrument(symbol="CLF7", tick_size=Decimal("0.01"), multiplier=Decimal(1000)),
        start_px_ticks=6_850,  # 68.50
        flow=FlowConfig(events_per_second=200, volatility_ticks=1.5),
    ),
)

DEMO_LIMITS = RiskLimits(
    max_order_qty_lots=50,
    max_position_lots=25,
    max_open_orders=100,
    max_orders_per_second=500,
    price_band_pct=5.0,
)


@dataclass
class SimPump:
    """Engine component that lets the simulated participants act and publishes market data.

    ``deliver`` gets the exchange's reports for clients; ``publish`` its book changes and trades
    (``L2_EVENT_DTYPE`` rows), every ``interval_s``.
    """

    exchange: SimExchange
    deliver: Callable[[list[ExecutionReport]], object]
    publish: Callable[[npt.NDArray[np.void]], object]
    engine: Engine | None = None
    interval_s: float = 0.02
    name: str = "simulator"
    _task: "asyncio.Task[None] | None" = None

    def start(self, engine: Engine) -> None:
        """Seed the books and start stepping the participants."""
        self.engine = engine
        now = engine.clock.now_ns()
        self.deliver(self.exchange.seed_books(now))
        self.exchange.step(now)
        self.pump()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="simulator")

    def pump(self) -> None:
        """Step the participants to now, deliver client reports, publish market data."""
        assert self.engine is not None
        self.deliver(self.exchange.step(self.engine.clock.now_ns()))
        events = self.exchange.drain_market_events()
        if events.shape[0]:
            self.publish(events)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                self.pump()
            except Exception:
                log.exception("simulator step failed")

    async def stop(self) -> None:
        """Stop stepping."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def handle(self, command: object) -> None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state of its own to show."""
        return []


#: The demo's instruments whose orders go over OUCH 5.0 (the others' over FIX), its account
#: (user, password) and Firm appendage.
DEMO_OUCH_SYMBOLS = ("CLF7",)
DEMO_OUCH_ACCOUNT = ("QWC1", "qwdemo")
DEMO_OUCH_FIRM = "QWCN"
_OUCH_CLIENT_STATE = "ouch-QWC1-client"


class DemoOuchPort:
    """The simulator's OUCH port (its application and listener) as an engine component."""

    name = "simulator OUCH port"

    def __init__(self, app: SimOuchApplication, listener: SoupServerListener) -> None:
        self.app = app
        self.listener = listener

    def start(self, engine: Engine) -> None:
        """Do nothing: the FIX link's start-up starts the listener, then the client."""

    async def stop(self) -> None:
        """Stop listening."""
        await self.listener.stop()

    def handle(self, command: object) -> None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state of its own to show."""
        return []


class DemoItchFeed:
    """The demo's market data as ITCH 5.0 over MoldUDP64 multicast on loopback.

    The simulator's order-by-order changes (:class:`engine.sim.itch_feed.SimItchFeed`) are
    published on an A and a B group with a retransmission server
    (:class:`engine.feeds.multicast.MoldPublisher`); the engine's side joins both
    (:class:`engine.feeds.multicast.FeedReceiver`, from message 1: what it missed before it
    joined is re-requested) and builds its books from them
    (:class:`engine.venues.itch.feed.ItchMarketData`). The FIX session then carries orders only.
    """

    name = "ITCH market data"

    def __init__(
        self,
        exchange: SimExchange,
        market: MarketData,
        clock: Clock,
        listings: Sequence[SimInstrument],
    ) -> None:
        from engine.feeds.multicast import FeedReceiver, Group, MoldPublisher
        from engine.sim.itch_feed import SimItchFeed
        from engine.venues.itch.feed import ItchMarketData

        self.sim_feed = SimItchFeed(exchange, clock.now_ns())
        exchange.order_feed = self.sim_feed
        self.market_data = ItchMarketData(market, clock)
        for x in listings:
            self.market_data.add_instrument(x.instrument)
        a, b = Group("239.255.77.1", _free_udp_port()), Group("239.255.77.2", _free_udp_port())
        session = ("QWDEMO" + id_epoch(clock.now_ns())).encode("ascii")[:10].ljust(10)
        self.publisher = MoldPublisher(session, a, b)
        self.receiver = FeedReceiver(
            a, b, self.market_data.on_packets, session=session, on_lost=self.market_data.on_lost
        )
        self.receiver.arbiter.next_seq = 1
        self._started = False

    async def open(self) -> None:
        """Start the retransmission server and join the groups (the link's start-up)."""
        port = await self.publisher.serve_requests()
        self.receiver.recovery = ("127.0.0.1", port)
        await self.receiver.start()
        self._started = True
        self.flush()

    def flush(self) -> None:
        """Publish what the simulator changed since the last call."""
        msgs = self.sim_feed.take()
        if msgs and self._started:
            self.publisher.publish(msgs)
        elif msgs:  # before the groups are open: kept for the first flush after
            self.sim_feed.put_back(msgs)

    def start(self, engine: Engine) -> None:
        """Do nothing: the FIX link's start-up opens the feed first."""

    async def stop(self) -> None:
        """Leave the groups, close the sockets."""
        self.receiver.close()
        self.publisher.close()

    def handle(self, command: object) -> None:
        """Own no commands."""
        return None

    def state_events(self) -> list[Event]:
        """Have no state of its own to show."""
        return []


def _free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ouch_demo(
    engine: Engine,
    exchange: SimExchange,
    link: FixLink,
    store_dir: Path | None,
    barrier: WriteBarrier | None = None,
) -> tuple[OuchVenue, SimOuchApplication, list[Component]]:
    """Wire the simulator's OUCH port and the engine's OUCH session on loopback.

    The session logs in once the port listens (a step of the FIX link's start-up, after the
    FIX acceptor). With ``store_dir`` both ends keep their sequence numbers and UserRefNums
    in files there, so a restart resumes them; with ``barrier`` (the journal's
    ``after_written``) the engine's next expected number waits for the journal.
    """
    loop = asyncio.get_event_loop()
    app = SimOuchApplication(exchange, engine.clock)
    # The session the port kept (a restart after midnight goes on with it), else today's.
    day = ouch_session_name(store_dir, [DEMO_OUCH_ACCOUNT], engine.clock.now_ns())
    user, password = DEMO_OUCH_ACCOUNT
    listener = ouch_port(
        app, [DEMO_OUCH_ACCOUNT], session=day, clock=engine.clock, store_dir=store_dir
    )
    state = engine_state(store_dir, _OUCH_CLIENT_STATE, barrier, day=day)
    venue = OuchVenue(
        engine.clock,
        name="SIM-OUCH",
        defer=loop.call_soon,
        publish=engine.bus.publish,
        firm=DEMO_OUCH_FIRM,
    )
    session = OuchSession(
        venue,
        username=user,
        password=password,
        host="127.0.0.1",
        port=0,
        state=state,
        clock=engine.clock,
        session=day,
        publish=engine.bus.publish,
        connect_on_start=False,
    )

    async def connect() -> None:
        session.link.port = await listener.start()
        await session.link.start()
        try:  # ready before the FIX session brings the market data the strategies quote on
            await session.wait_ready(5.0)
        except TimeoutError:
            log.warning("demo OUCH session not ready after 5 s; its orders wait for it")

    link.add_startup(connect)
    return venue, app, [session, DemoOuchPort(app, listener)]


#: CompIDs of the demo's FIX session (our side -> the simulator).
DEMO_CLIENT_COMP_ID = "QWCONSOLE"
DEMO_SIM_COMP_ID = "QWSIM"
_CLIENT_STORE = f"FIX.4.4-{DEMO_CLIENT_COMP_ID}-{DEMO_SIM_COMP_ID}"
_SIM_STORE = f"FIX.4.4-{DEMO_SIM_COMP_ID}-{DEMO_CLIENT_COMP_ID}"


def _open_stores(engine: Engine, store_dir: Path) -> dict[str, Future[MessageStore]]:
    """Start opening both sessions' file stores on a worker thread; return them by name.

    Opening indexes each store's messages (a kernel that releases the GIL: ~1-3 s for a
    day's gigabyte), which then overlaps the journal's recovery on the other core.
    """
    store_dir.mkdir(parents=True, exist_ok=True)
    now = engine.clock.now_ns()
    pool = ThreadPoolExecutor(1, thread_name_prefix="open-fix-store")
    opening = {
        name: pool.submit(FileStore, store_dir, name, now) for name in (_SIM_STORE, _CLIENT_STORE)
    }
    pool.shutdown(wait=False)  # the thread ends once both are open
    return opening  # type: ignore[return-value]  # Future is invariant; FileStore is one


def _close_opened(opening: Mapping[str, Future[MessageStore]]) -> None:
    """Close the stores opened for a build that failed (their files stay as they were)."""
    for future in opening.values():
        with contextlib.suppress(Exception):
            future.result().close()


def _fix_demo(
    engine: Engine,
    exchange: SimExchange,
    market: MarketData,
    desk: TradingDesk,
    store_dir: Path | None,
    barrier: WriteBarrier | None = None,
    opening: Mapping[str, Future[MessageStore]] | None = None,
    listings: Sequence[SimInstrument] = DEMO_LISTINGS,
    market_data: str = "fix",
) -> tuple[dict[str, Venue], list[Component]]:
    """Wire the simulator's FIX acceptor and the engine's FIX initiator on loopback.

    The listings of :data:`DEMO_OUCH_SYMBOLS` trade over OUCH (:func:`_ouch_demo`), their
    market data still over FIX. Returns each listing's venue, by symbol, and the components.

    ``barrier`` (the journal's ``after_written``) puts the engine's store behind the journal:
    an inbound message counts as received on disk only once the journal has what it caused.
    ``opening`` are the stores :func:`_open_stores` is opening, by name.
    """
    opening = opening or {}
    loop = asyncio.get_event_loop()
    app = SimFixApplication(exchange, engine.clock)
    link = FixLink(engine.bus, engine.clock, store_dir=store_dir, write_barrier=barrier)
    reset = store_dir is None

    def store(name: str) -> MessageStore:
        if name in opening:
            return opening[name].result()
        if store_dir is None:
            return MemoryStore(engine.clock.now_ns())
        store_dir.mkdir(parents=True, exist_ok=True)
        return FileStore(store_dir, name, engine.clock.now_ns())

    sim_session = FixSession(
        SessionSettings(
            begin_string="FIX.4.4",
            sender_comp_id=DEMO_SIM_COMP_ID,
            target_comp_id=DEMO_CLIENT_COMP_ID,
            reset_on_logon=reset,
        ),
        store(_SIM_STORE),
        app,
        NullLog("simulator"),
        engine.clock,
    )
    acceptor = SocketAcceptor([sim_session], host="127.0.0.1", port=0, clock=engine.clock)

    # The desk reconciles the venue's working orders when its link comes up (VenueLinkChanged).
    venue = FixVenue(engine.clock, name="SIM-FIX", defer=loop.call_soon, publish=engine.bus.publish)
    config = SessionSettings(
        begin_string="FIX.4.4",
        sender_comp_id=DEMO_CLIENT_COMP_ID,
        target_comp_id=DEMO_SIM_COMP_ID,
        connection_type="initiator",
        heart_bt_int=10,
        reset_on_logon=reset,
    )
    session = FixSession(
        config,
        store(_CLIENT_STORE),
        venue,
        BusLog(engine.bus, engine.clock, str(config.session_id)),
        engine.clock,
    )
    if not reset and (
        session.next_sender_seq_num < sim_session.next_target_seq_num
        or session.next_target_seq_num > sim_session.next_sender_seq_num
    ):  # one side counts messages the other never sent (a store was lost): start afresh.
        # The other way round (a side behind, after a kill) is what resends are for.
        log.warning(
            "demo FIX stores disagree (engine %d/%d, simulator %d/%d); resetting both "
            "sessions' sequence numbers",
            session.next_sender_seq_num,
            session.next_target_seq_num,
            sim_session.next_sender_seq_num,
            sim_session.next_target_seq_num,
        )
        session.store.reset(engine.clock.now_ns())
        sim_session.store.reset(engine.clock.now_ns())
    venue.bind(session)
    publish, extra = _market_feed(engine, exchange, market, venue, link, app, listings, market_data)
    initiator = SocketInitiator(
        session, [("127.0.0.1", 0)], reconnect_interval=1.0, clock=engine.clock
    )
    link.add_acceptor(acceptor, track=False)

    async def connect() -> None:
        initiator.hosts = [("127.0.0.1", acceptor.port)]
        await initiator.start()

    link.initiators.append(initiator)
    link.track(session)
    venues: dict[str, Venue] = {x.instrument.symbol: venue for x in listings}
    ouch = [x.instrument for x in listings if x.instrument.symbol in DEMO_OUCH_SYMBOLS]
    if not ouch:
        link.add_startup(connect)
        return venues, [link, *extra, SimPump(exchange, app.dispatch, publish)]
    # The OUCH session first: logged in before the FIX session's market data starts quoting.
    ouch_venue, ouch_app, ouch_parts = _ouch_demo(engine, exchange, link, store_dir, barrier)
    link.add_startup(connect)
    for instrument in ouch:
        venues[instrument.symbol] = ouch_venue
        if venue.feed is not None:
            venue.feed.add_instrument(instrument)  # its market data: still the FIX session's

    def dispatch(reports: list[ExecutionReport]) -> None:
        app.dispatch(reports)  # each port sends only its own clients' reports
        ouch_app.dispatch(reports)

    return venues, [link, *ouch_parts, *extra, SimPump(exchange, dispatch, publish)]


def _market_feed(
    engine: Engine,
    exchange: SimExchange,
    market: MarketData,
    venue: FixVenue,
    link: FixLink,
    app: SimFixApplication,
    listings: Sequence[SimInstrument],
    market_data: str,
) -> tuple[Callable[[npt.NDArray[np.void]], None], list[Component]]:
    """Give the engine its market data (FIX, or ITCH); return the simulator's publish hook."""
    itch = None
    if market_data == "itch":
        itch = DemoItchFeed(exchange, market, engine.clock, listings)
        link.add_startup(itch.open)  # joined before the FIX session logs on
    else:
        venue.set_feed(FixMarketData(market, engine.clock))

    def publish(events: npt.NDArray[np.void]) -> None:
        app.publish_market_data(events)
        if itch is not None:
            itch.flush()

    return publish, [] if itch is None else [itch]


def build_demo(
    engine: Engine,
    *,
    seed: int = 7,
    transport: str = "fix",
    journal_dir: Path | None = None,
    store_dir: Path | None = None,
    record_path: Path | None = None,
    listings: Sequence[SimInstrument] = DEMO_LISTINGS,
    demo_strategy: bool = True,
    market_data: str = "fix",
) -> TradingDesk:
    """Add the demo's simulator, trading desk and market maker to ``engine``; return the desk.

    With ``transport="fix"`` (the default) orders and market data go over a real FIX 4.4
    session on loopback between the engine's initiator and the simulator's acceptor; with
    ``"inprocess"`` the order manager calls the simulator directly.

    ``journal_dir`` journals everything to today's file there and, if that file exists
    already (a restart mid-day), first rebuilds orders and positions from it. ``store_dir``
    keeps both FIX sessions' sequence numbers and messages in file stores there, so a restart
    resumes them instead of resetting to 1. ``record_path`` records the market data the
    engine receives into that tick store (``engine.tickstore.recorder``). ``listings`` are the
    simulator's instruments (the demo's three by default; ``engine.sim.listings`` makes them
    from configuration); ``demo_strategy`` adds the market maker quoting all of them.
    ``market_data="itch"`` (with the FIX transport) takes the market from the simulator's ITCH
    5.0 feed over MoldUDP64 multicast on loopback (:class:`DemoItchFeed`) instead of FIX.
    """
    if transport not in ("fix", "inprocess"):
        raise ValueError(f"transport must be 'fix' or 'inprocess', got {transport!r}")
    if market_data not in ("fix", "itch") or (market_data == "itch" and transport != "fix"):
        raise ValueError(
            f"market_data must be 'fix' or 'itch' (with transport 'fix'), got {market_data!r}"
        )
    loop = asyncio.get_event_loop()
    # The epoch keeps ExecIDs and OrderIDs unique across restarts of the (in-process) venue.
    exchange = SimExchange(listings, seed=seed, epoch=id_epoch(engine.clock.now_ns()))
    symbols = [x.instrument.symbol for x in listings]
    market = MarketData(
        symbols, engine.bus, engine.clock, centres=[x.start_px_ticks for x in listings]
    )
    market.track_queue()  # conservative queue estimates of own orders for the ladder
    desk = TradingDesk(engine.bus, engine.clock, DEMO_LIMITS)
    desk.set_market_data(market)
    recovered = None
    barrier = None
    pre: list[Component] = [LogFeed()]
    opening = _open_stores(engine, store_dir) if transport == "fix" and store_dir else {}
    if journal_dir is not None:
        try:
            recovered = recover_day(
                journal_dir, engine.engine_id, engine.clock.now_ns(), engine.report_progress
            )
            journaling = JournalComponent(engine, journal_dir, recovered=recovered)
        except BaseException:
            _close_opened(opening)
            raise
        barrier = journaling.journal.after_written
        pre.append(journaling)
    if record_path is not None:
        from engine.tickstore.recorder import Recorder

        recorder = Recorder(
            record_path, engine.clock, [x.instrument for x in listings], venue="SIM"
        )
        recorder.attach(market)  # before anyone holds market.apply
        pre.append(recorder)
    if transport == "inprocess":
        sim_venue = SimVenue(exchange, engine.clock, loop.call_soon, name="SIM")
        venues: dict[str, Venue] = {x.instrument.symbol: sim_venue for x in listings}
        pump = SimPump(exchange, sim_venue.deliver, market.apply)
        components: list[Component] = [*pre, desk, pump]
    else:
        venues, fix_parts = _fix_demo(
            engine, exchange, market, desk, store_dir, barrier, opening, listings, market_data
        )
        components = [*pre, desk, *fix_parts]
    for listing in listings:
        desk.add_instrument(listing.instrument, venues[listing.instrument.symbol])
    if recovered is not None:
        engine.report_progress("restoring orders and positions")
        desk.restore(recovered)
        desk.adopt_unjournaled(recovered)
    if demo_strategy:
        desk.add_strategy(
            MarketMaker(
                DEMO_STRATEGY_ID,
                symbols,
                qty_lots=1,
                half_spread_ticks=1,
                skew_ticks_per_lot=0.5,
                max_position_lots=10,
            ),
            autostart=True,
        )
    # The desk first: its position book must exist before the first fill.
    for component in components:
        engine.add_component(component)
    return desk
