# SPDX-License-Identifier: MIT
"""A time axis for nanosecond timestamps: readable labels in a chosen time zone.

Charts plot x as seconds since an origin (the first loaded day's midnight, UTC): a float64
then resolves far below a nanosecond over a day, where seconds since 1970 would not. The axis
turns x back into ns since the epoch and labels ticks at round clock steps (1 ns ... 12 h) in
the selected zone (``UTC``, ``America/Chicago``, ...), with as many fraction digits as the step
needs.
"""

import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Final
from zoneinfo import ZoneInfo

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPainter, QPen

NS: Final[int] = 1_000_000_000

#: Major tick steps, seconds (minor ticks are the next smaller step that divides it).
_STEPS: Final[tuple[float, ...]] = (
    *(m * 10.0**e for e in range(-9, 0) for m in (1, 2, 5)),
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600,
    12 * 3600, 24 * 3600,
)  # fmt: skip
#: Time zones offered by the zone selector.
ZONES: Final[tuple[str, ...]] = (
    "UTC", "America/Chicago", "America/New_York", "Europe/London", "Asia/Tokyo", "local",
)  # fmt: skip


def zone(name: str) -> tzinfo | None:
    """Return the zone called ``name``; ``None`` for ``"local"`` (this machine's zone)."""
    if name == "UTC":
        return UTC
    if name == "local":
        return None
    return ZoneInfo(name)


@functools.lru_cache(maxsize=4096)
def format_ns(ts_ns: int, tz: tzinfo | None, step_s: float) -> str:
    """Format ``ts_ns`` for a tick ``step_s`` apart from its neighbours.

    Cached: a pan relabels the same round times frame after frame.
    """
    secs, frac = divmod(ts_ns, NS)
    dt = datetime.fromtimestamp(secs, tz=tz)
    if step_s >= 60:
        return dt.strftime("%H:%M")
    text = dt.strftime("%H:%M:%S")
    digits = 0
    while step_s < 10.0**-digits * 0.999 and digits < 9:
        digits += 1
    if digits:
        text += "." + f"{frac:09d}"[:digits]
    if step_s < 1e-3:
        # Sub-millisecond steps: the seconds are the same on every label, keep the fraction.
        text = "…" + text[6:]
    return text


class OpaqueGridAxis(pg.AxisItem):
    """An axis whose translucent tick and grid lines are drawn in opaque, pre-mixed colours.

    pyqtgraph fades grid lines with the pen's alpha. Qt's raster engine blends a translucent
    vertical line one pixel row at a time: the grid of a 1600 x 700 chart took 25 ms a frame
    here, against under 1 ms for the same lines opaque. The chart puts its axes below the
    data, so the lines lie on the plain background: mixing their colour with
    :attr:`background` by the same alpha draws the same pixels.
    """

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation=orientation, **kwargs)
        self.background = QColor("#000000")

    def set_background(self, color: str | QColor) -> None:
        """Mix the lines with ``color`` (the chart's background) from now on."""
        self.background = QColor(color)
        self.picture = None
        self.update()

    def generateDrawSpecs(self, p: QPainter) -> Any:
        """Return pyqtgraph's specs with every translucent tick pen made opaque."""
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, texts = specs
        bg = self.background
        opaque: dict[int, QPen] = {}
        out = []
        for pen, p1, p2 in ticks:
            c = pen.color()
            a = c.alpha()
            if a < 255:
                mixed = opaque.get(c.rgba())
                if mixed is None:
                    f = a / 255.0
                    mixed = opaque[c.rgba()] = QPen(pen)
                    mixed.setColor(
                        QColor(
                            round(c.red() * f + bg.red() * (1 - f)),
                            round(c.green() * f + bg.green() * (1 - f)),
                            round(c.blue() * f + bg.blue() * (1 - f)),
                        )
                    )
                pen = mixed
            out.append((pen, p1, p2))
        return axis, out, texts


def spacing(
    steps: Sequence[float],
    span: float,
    size: float,
    px_per_label: float,
    divides: Callable[[float], bool],
) -> list[tuple[float, float]]:
    """Return pyqtgraph's tick spacing ``[(major, 0), (minor, 0)]`` (``[]``: empty span).

    Major: the smallest of ``steps`` (ascending) that leaves ``px_per_label`` pixels per
    label; minor: the next smaller step whose ratio to it satisfies ``divides``.
    """
    if span <= 0 or size <= 0:
        return []
    want = span * px_per_label / size
    i = next((k for k, st in enumerate(steps) if st >= want), len(steps) - 1)
    major = steps[i]
    minor = next((st for st in reversed(steps[:i]) if divides(major / st)), major)
    return [(major, 0.0), (minor, 0.0)]


def price_steps(tick: float) -> list[float]:
    """Return the label steps of a price axis: round numbers that are whole ticks, ascending.

    ``1, 2, 2.5, 5 x 10^k`` kept only where a whole number of ticks (tick 0.25: 0.25, 0.5,
    1, 2, 2.5, 5, ...; tick 0.01: 0.01, 0.02, 0.05, 0.1, ...); the tick itself first.
    """
    out = [tick]
    for e in range(-10, 10):
        for m in (1.0, 2.0, 2.5, 5.0):
            step = m * 10.0**e
            ticks = step / tick
            if step > tick * (1 + 1e-9) and abs(ticks - round(ticks)) < 1e-6 * ticks:
                out.append(step)
    return out


class PriceAxis(OpaqueGridAxis):
    """Left axis of the charts: labels at whole ticks, with the instrument's decimals.

    Parameters
    ----------
    tick : float
        Price of one tick.
    decimals : int
        Decimals that show every multiple of the tick exactly.
    """

    def __init__(self, tick: float, decimals: int, **kwargs: Any) -> None:
        super().__init__(orientation="left", **kwargs)
        self.decimals = decimals
        self.steps = price_steps(tick)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        """Whole-tick steps, about one label per 40 pixels; minor lines at the next step down."""
        return spacing(self.steps, maxVal - minVal, size, 40.0, lambda r: abs(r - round(r)) < 1e-6)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        """Prices with the instrument's decimals and thousands separators."""
        return [f"{v:,.{self.decimals}f}" for v in values]


class NsTimeAxis(OpaqueGridAxis):
    """Bottom axis of the charts: x is seconds since ``origin_ns``.

    Parameters
    ----------
    origin_ns : int
        ns since the epoch at x = 0.
    tz_name : str
        Zone of the labels (one of :data:`ZONES` or any IANA name).
    """

    def __init__(self, origin_ns: int = 0, tz_name: str = "UTC", **kwargs: Any) -> None:
        super().__init__(orientation="bottom", **kwargs)
        self.origin_ns = origin_ns
        self.tz_name = tz_name
        self.tz = zone(tz_name)
        self.setLabel(f"Time ({tz_name})")

    def set_zone(self, tz_name: str) -> None:
        """Label in another time zone."""
        self.tz_name = tz_name
        self.tz = zone(tz_name)
        self.setLabel(f"Time ({tz_name})")
        self.picture = None
        self.update()

    def to_ns(self, x: float) -> int:
        """Return ns since the epoch at ``x``."""
        return self.origin_ns + round(x * NS)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        """Round clock steps, about one label per 120 pixels."""
        return spacing(_STEPS, maxVal - minVal, size, 120.0, lambda r: r in (2, 4, 5, 6, 10))

    def tickValues(
        self, minVal: float, maxVal: float, size: float
    ) -> list[tuple[float, list[float]]]:
        """Put ticks at round clock times in the label zone (whole minutes, hours...)."""
        out: list[tuple[float, list[float]]] = []
        for step, _ in self.tickSpacing(minVal, maxVal, size):
            step_ns = round(step * NS)
            t0 = self.to_ns(minVal)
            offset = 0
            if step >= 3600:
                off = datetime.fromtimestamp(t0 // NS, tz=self.tz).utcoffset()
                offset = int(off.total_seconds()) * NS if off else 0
            first = -(-(t0 + offset) // step_ns) * step_ns - offset
            n = int((maxVal - minVal) / step) + 2
            values = [(first + k * step_ns - self.origin_ns) / NS for k in range(n)]
            out.append((step, [v for v in values if minVal <= v <= maxVal]))
        return out

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        """Clock labels in the selected zone."""
        return [format_ns(self.to_ns(v), self.tz, spacing) for v in values]
