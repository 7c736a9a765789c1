# SPDX-License-Identifier: MIT
"""The relays the Monitor watches: settings → ``StatusPoller`` on a thread → the Relays panel.

The relays come from the console's settings (``[relays]`` in ``qwconsole.ini``)::

    [relays]
    watch=ny4=wss://10.0.4.30:7350, ld4=wss://10.1.0.5:7350#AB:CD:…
    token_env=QWCONSOLE_RELAY_TOKEN     ; the default
    token_file=                         ; or a file holding the token

Each entry is ``[name=]ws[s]://host:port[#fingerprint]``: without a fingerprint the first
certificate seen is pinned in ``<config dir>/known-relays.json`` (as the remote engines' are in
``known-engines.json``). The token, as for remote engines, is never stored in the settings.

:class:`RelayMonitor` runs a :class:`engine.relay.poller.StatusPoller` on an asyncio loop in
a thread of its own (the GUI never waits for a relay), turns each reading into the panel's
plain :class:`widgets.monitor.relays.RelayLine`, and hands it to the panel in the GUI thread
through the process's thread relay. With no relay configured nothing is started and the
relay protocol is not even imported.

:func:`analyzer_relays` hands the same relays, token and pins to the Analyzer, whose *Relays*
tab charts an instrument of one of them live (:mod:`analyzer.views.relay_source`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from PySide6.QtCore import QObject

from app.paths import config_dir
from widgets.monitor.relays import (
    CONNECTING,
    INVALID,
    LinkLine,
    RelayLine,
    RelaysPanel,
    SourceLine,
)
from widgets.relay import thread_relay

if TYPE_CHECKING:
    from analyzer.views.relay_source import RelaySettings
    from app.settings import AppSettings
    from engine.relay.poller import Reading, StatusPoller, WatchTarget

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RelayWatch:
    """One ``relays/watch`` entry, read."""

    name: str
    host: str
    port: int
    tls: bool
    fingerprint: str = ""

    @property
    def endpoint(self) -> str:
        """Return ``host:port``."""
        return f"{self.host}:{self.port}"


def parse_watch(entry: str) -> RelayWatch:
    """Return the relay of one ``relays/watch`` entry ``[name=]ws[s]://host:port[#fp]``.

    Raises
    ------
    ValueError
        Naming the entry and what is wrong with it.
    """
    text = entry.strip()
    name, sep, url = text.partition("=")
    if not sep or "://" in name:
        name, url = "", text
    url, _, fp = url.partition("#")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as e:
        raise ValueError(f"relays/watch: {entry!r}: {e}") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname or port is None:
        raise ValueError(
            f"relays/watch: {entry!r} is not [name=]wss://host:port (or ws:// on loopback)"
        )
    fp = fp.strip().upper()
    if fp and (len(fp) != 95 or any(c not in "0123456789ABCDEF:" for c in fp)):
        raise ValueError(
            f"relays/watch: {entry!r}: the fingerprint after # must be the SHA-256 "
            "one, AB:CD:… (32 pairs)"
        )
    host = parts.hostname
    return RelayWatch(name.strip() or f"{host}:{port}", host, port, parts.scheme == "wss", fp)


def read_token(env: str, file: str) -> str:
    """Return the relays' token from ``$env`` or, failing that, ``file``; ``""`` if neither."""
    token = os.environ.get(env, "").strip() if env else ""
    if token or not file:
        return token
    try:
        return Path(file).expanduser().read_text(encoding="utf-8").strip()
    except OSError as e:
        log.warning("relays/token_file: cannot read %s (%s)", file, e)
        return ""


def analyzer_relays(settings: AppSettings) -> RelaySettings:
    """Return the watched relays (``[relays] watch``) as the Analyzer's relay sources.

    Entries that cannot be read, or a name used twice, are listed in ``problems`` (the
    Analyzer shows them) instead of being charted from.
    """
    from analyzer.views.relay_source import RelayChoice, RelaySettings

    choices: list[RelayChoice] = []
    problems: list[str] = []
    for entry in settings.relays:
        try:
            w = parse_watch(entry)
        except ValueError as e:
            problems.append(str(e))
            continue
        if any(c.name == w.name for c in choices):
            problems.append(f"relays/watch: the name {w.name} is used twice")
            continue
        choices.append(RelayChoice(w.name, w.host, w.port, w.tls, w.fingerprint))
    return RelaySettings(
        choices=tuple(choices),
        token=read_token(settings.relay_token_env, settings.relay_token_file),
        pins=config_dir() / "known-relays.json",
        hint=f"{settings.path}, [relays] watch=wss://host:port",
        problems=tuple(problems),
    )


def to_line(r: Reading) -> RelayLine:
    """Return the panel's line for a poller reading."""
    st = r.status
    if st is None:
        return RelayLine(r.name, r.endpoint, r.state, r.error)
    sources = tuple(
        SourceLine(
            s.name,
            s.kind,
            tuple(s.symbols),
            r.source_rates.get(s.name, 0.0),
            s.last_row_age_ms,
            s.state,
        )
        for s in st.sources
    )
    links = tuple(
        LinkLine(
            x.peer,
            x.user,
            x.role,
            x.client,
            tuple(x.symbols),
            r.subscriber_rates.get(x.peer, 0.0),
            x.lag_rows,
            x.lag_ms,
            x.conflations,
            x.stalled,
        )
        for x in st.subscribers
    )
    return RelayLine(
        r.name,
        r.endpoint,
        r.state,
        r.error,
        st.relay_id,
        st.uptime_s,
        st.instruments,
        r.rows_in_per_s,
        st.cached_rows,
        st.cached_bytes,
        st.conflations,
        sources,
        links,
    )


class RelayMonitor(QObject):
    """Watch the configured relays and keep ``panel`` up to date (module docstring).

    Parameters
    ----------
    entries : list[str]
        ``relays/watch`` entries.
    token : str
        The relays' token (``""``: none; every relay then says so).
    panel : RelaysPanel
        Where the relays are shown.
    pins : Path | None
        Pinned fingerprints (``<config dir>/known-relays.json`` by default).
    interval_s : float
        Between two status requests to a relay.
    """

    def __init__(
        self,
        entries: list[str],
        token: str,
        panel: RelaysPanel,
        *,
        pins: Path | None = None,
        interval_s: float = 1.0,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.panel = panel
        self.interval_s = interval_s
        self.pins_path = pins or config_dir() / "known-relays.json"
        self._order: list[str] = []
        self._lines: dict[str, RelayLine] = {}
        self._targets: list[tuple[RelayWatch, str]] = []
        for entry in entries:
            try:
                w = parse_watch(entry)
            except ValueError as e:
                self._add(RelayLine(entry.strip(), "?", INVALID, str(e)))
                continue
            if w.name in self._lines:
                self._add(
                    RelayLine(
                        f"{w.name} ({entry.strip()})",
                        w.endpoint,
                        INVALID,
                        f"relays/watch: the name {w.name} is used twice",
                    )
                )
            elif not token:
                self._add(
                    RelayLine(
                        w.name,
                        w.endpoint,
                        INVALID,
                        "no token: set "
                        "$QWCONSOLE_RELAY_TOKEN (relays/token_env) or "
                        "relays/token_file",
                    )
                )
            else:
                self._add(RelayLine(w.name, w.endpoint, CONNECTING))
                self._targets.append((w, token))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        #: The poller (once started).
        self.poller: StatusPoller | None = None
        self._show()

    @classmethod
    def from_settings(
        cls, settings: AppSettings, panel: RelaysPanel, parent: QObject | None = None
    ) -> RelayMonitor:
        """Return a monitor of the relays in ``settings``, started if there are any."""
        panel.set_hint(f"{settings.path}: [relays] watch=wss://host:port (docs/relay.md)")
        token = read_token(settings.relay_token_env, settings.relay_token_file)
        monitor = cls(settings.relays, token, panel, parent=parent)
        monitor.start()
        return monitor

    @property
    def watching(self) -> bool:
        """Return whether the poller's thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def _add(self, line: RelayLine) -> None:
        self._order.append(line.name)
        self._lines[line.name] = line

    def _show(self) -> None:
        self.panel.set_relays([self._lines[n] for n in self._order])

    def start(self) -> None:
        """Start the poller's thread (nothing to do without relays to watch)."""
        if not self._targets or self._thread is not None:
            return
        from engine.relay.poller import StatusPoller, WatchTarget
        from engine.remote.tls import PinStore

        pins = PinStore(self.pins_path)
        targets: list[WatchTarget] = [
            WatchTarget(
                w.name, w.host, w.port, token, tls=w.tls, fingerprint=w.fingerprint, pins=pins
            )
            for w, token in self._targets
        ]
        relay, me = thread_relay(), weakref.ref(self)

        def on_reading(r: Reading) -> None:  # on the poller's thread
            relay.post(me, "_on_line", to_line(r))

        self.poller = StatusPoller(targets, on_reading, interval_s=self.interval_s)
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self.poller, started), name="qw-relay-watch", daemon=True
        )
        self._thread.start()
        started.wait(5.0)

    def _run(self, poller: StatusPoller, started: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        stop = self._stop = asyncio.Event()

        async def main() -> None:
            await poller.start()
            started.set()
            try:
                await stop.wait()
            finally:
                await poller.close()

        try:
            loop.run_until_complete(main())
        except Exception:
            log.exception("relay watch stopped")
        finally:
            started.set()
            loop.close()

    def _on_line(self, line: RelayLine) -> None:
        if line.name in self._lines:
            self._lines[line.name] = line
            self._show()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop watching and join the poller's thread (safe to call more than once)."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout_s)
        self._thread = None
