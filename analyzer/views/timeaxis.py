# SPDX-License-Identifier: MIT
"""A time axis for nanosecond timestamps: readable labels in a chosen time zone.

Charts plot x as seconds since an origin (the first loaded day's midnight, UTC): a float64
then resolves far below a nanosecond over a day, where seconds since 1970 would not. The axis
turns x back into ns since the epoch and labels ticks at round clock steps (1 ns ... 12 h) in
the selected zone (``UTC``, ``America/Chicago``, ...), with as many fraction digits as the step
needs.
"""

import functools
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Final, cast
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen, QTransform

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


#: What an axis draws: its line (pen, line), its tick and grid lines grouped by pen, and its
#: labels (rect, alignment flags, text).
_Drawn = tuple[
    tuple[QPen, QLineF] | None,
    list[tuple[QPen, list[QLineF]]],
    list[tuple[QRectF, int, str]],
]


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
        self._pens: dict[tuple[int, int, int, float], QPen] = {}
        self._font_key = ""
        self._metrics: QFontMetricsF | None = None
        self._sizes: dict[str, tuple[float, float]] = {}
        self._drawn: _Drawn | None = None
        self._bounds: tuple[tuple[object, ...], QRectF] | None = None
        self._rects: tuple[tuple[object, ...], list[QRect]] | None = None
        self._specs_made = 0  # (specs made so far: the rects above are of the latest)
        # Labels on the major ticks only: the minor ones are grid lines. pyqtgraph would
        # measure every minor label each frame only to find them too dense to draw (a pan
        # frame spent ~1.5 ms per axis on that).
        self.setStyle(maxTextLevel=0)

    def boundingRect(self) -> QRectF:
        """Return pyqtgraph's bounds (the axis and, with a grid, its view), kept per layout.

        Qt asks them several times a paint; pyqtgraph maps both rects again each time.
        """
        view = self.linkedView()
        if view is None or self.grid is False:
            return super().boundingRect()  # type: ignore[no-any-return]
        key = (self.geometry(), view.geometry(), view.parentItem())
        if self._bounds is None or self._bounds[0] != key:
            self._bounds = (key, super().boundingRect())
        return self._bounds[1]

    def set_background(self, color: str | QColor) -> None:
        """Mix the lines with ``color`` (the chart's background) from now on."""
        self.background = QColor(color)
        self.picture = None
        self.update()

    def paint(self, p: QPainter, opt: Any, widget: Any) -> None:
        """Draw the axis line, the tick and grid lines (one call per pen) and the labels.

        pyqtgraph records them into a ``QPicture`` line by line and replays it, one Python
        call per line twice over for an axis whose range changed (the time axes, every pan
        frame). Here the lines are grouped by pen once per range (:attr:`picture` still
        marks when pyqtgraph wants them regenerated) and drawn straight onto the painter.
        """
        if self.orientation not in ("left", "bottom") or self._tickLevels is not None:
            super().paint(p, opt, widget)
            return
        picture: Any = self.picture  # pyqtgraph sets it to None when the specs are due again
        drawn = self._drawn
        if picture is None or drawn is None:
            drawn = self._drawn = self._draw_specs(p) or (None, [], [])
            self.picture = cast(Any, drawn)
            self._specs_made += 1
        axis, groups, texts = drawn
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        if axis is not None:
            p.setPen(axis[0])
            p.drawLine(axis[1])
        world = p.worldTransform()
        for i, (pen, lines) in enumerate(groups):
            if self.orientation == "left" and _hairline(pen, world):
                # Horizontal grid lines as one-pixel-high rects: the same pixels (Qt draws a
                # hairline's pixel (floor(x), floor(y)) from end to end), filled a row at a
                # time instead of stroked a pixel at a time (~0.1 ms a chart and frame).
                key = (self._specs_made, i, world.dx(), world.dy())
                if self._rects is None or self._rects[0] != key:
                    self._rects = (key, _row_rects(lines, world.dx(), world.dy()))
                p.setWorldTransform(QTransform())
                color = pen.color()
                for row in self._rects[1]:
                    p.fillRect(row, color)
                p.setWorldTransform(world)
                continue
            p.setPen(pen)
            p.drawLines(lines)
        if texts:
            font = self.style["tickFont"]
            if font is not None:
                p.setFont(font)
            p.setPen(self.textPen())
            for rect, flags, text in texts:
                p.drawText(rect, flags, text)

    def generateDrawSpecs(self, p: QPainter) -> Any:
        """Return the axis line, tick/grid lines and labels to draw, as pyqtgraph's would.

        pyqtgraph's own version builds a ``Point`` per tick end and measures every label with
        the painter each frame; a pan frame redraws both axes of every chart, and that was
        most of a frame's Python time. Here (left and bottom axes, the charts' own) the grid
        lines are drawn opaque (see the class), labels are measured once per text (cached
        per font), and only the major level is labelled. Other orientations and fixed tick
        lists go to pyqtgraph. (:meth:`paint` draws from the same specs, lines grouped.)
        """
        if self.orientation not in ("left", "bottom") or self._tickLevels is not None:
            return self._opaque(super().generateDrawSpecs(p))
        drawn = self._draw_specs(p)
        if drawn is None:
            return None
        axis, groups, texts = drawn
        if axis is None:
            return None
        axis_pen, axis_line = axis
        ticks = [(pen, line.p1(), line.p2()) for pen, lines in groups for line in lines]
        flagged = [(rect, Qt.AlignmentFlag(flags), text) for rect, flags, text in texts]
        return (axis_pen, axis_line.p1(), axis_line.p2()), ticks, flagged

    def _draw_specs(self, p: QPainter) -> "_Drawn | None":
        # The axis line, the tick and grid lines grouped by pen, and the labels.
        style = self.style
        font = style["tickFont"]
        if font is not None:
            p.setFont(font)
        bounds = self.mapRectFromParent(self.geometry())
        view = self.linkedView()
        ticks_in = (
            bounds
            if view is None or self.grid is False
            else view.mapRectToItem(self, view.boundingRect())
        )
        left = self.orientation == "left"
        if left:
            span = QLineF(
                bounds.right() - 1, bounds.top() - 1, bounds.right() - 1, bounds.bottom() + 1
            )
            start, stop, direction = ticks_in.right(), bounds.right(), -1.0
        else:
            span = QLineF(bounds.left() - 1, bounds.top() + 1, bounds.right() + 1, bounds.top() + 1)
            start, stop, direction = ticks_in.top(), bounds.top(), 1.0
        d0, d1 = self.mapToDevice(span.p1()), self.mapToDevice(span.p2())
        if d0 is None or d1 is None:
            return None
        length = math.hypot(d1.x() - d0.x(), d1.y() - d0.y())
        if length == 0:
            return None
        lo, hi = self.range[0], self.range[1]
        levels = self.tickValues(lo, hi, length)
        dif = hi - lo
        if dif == 0:
            scale, offset = 1.0, 0.0
        elif left:
            scale = -bounds.height() / dif
            offset = lo * scale - bounds.height()
        else:
            scale = bounds.width() / dif
            offset = lo * scale
        ends = (lo * scale - offset, hi * scale - offset)
        groups, first = self._tick_lines(
            levels, scale, offset, (min(ends), max(ends)), (start, stop, direction), length
        )
        axis = (self.pen(), span)
        if not self.style["showValues"] or not levels:
            return axis, groups, []
        return axis, groups, self._text_specs(levels[0], first, p.font(), stop)

    def _tick_lines(
        self,
        levels: list[tuple[float, list[float]]],
        scale: float,
        offset: float,
        limits: tuple[float, float],
        across: tuple[float, float, float],
        length: float,
    ) -> tuple[list[tuple[QPen, list[QLineF]]], list[float | None]]:
        # The lines of every level grouped by pen (in the order pyqtgraph draws them), and
        # where the major level's ticks are (None: outside).
        left = self.orientation == "left"
        start, stop, direction = across
        x_min, x_max = limits
        groups: dict[int, tuple[QPen, list[QLineF]]] = {}
        first: list[float | None] = []
        base_pen = self.tickPen()
        solid = base_pen.brush().style() == Qt.BrushStyle.SolidPattern
        for i, (_step, values) in enumerate(levels):
            pen = base_pen
            if solid:
                pen = self._level_pen(base_pen, self._level_alpha(i, len(values), length))
            tick_length = self.style["tickLength"] / (i * 0.5 + 1.0)
            end = stop if self.grid is not False else stop + tick_length * direction
            pos = np.asarray(values, dtype=np.float64) * scale - offset
            inside = (x_min <= pos) & (pos <= x_max)
            if i == 0:
                first = [
                    x if ok else None for x, ok in zip(pos.tolist(), inside.tolist(), strict=True)
                ]
            xs: list[float] = pos[inside].tolist()
            if left:
                lines = [QLineF(start, x, end, x) for x in xs]
            else:
                lines = [QLineF(x, start, x, end) for x in xs]
            group = groups.setdefault(id(pen), (pen, []))
            group[1].extend(lines)
        return [g for g in groups.values() if g[1]], first

    def _text_specs(
        self,
        level: tuple[float, list[float]],
        positions: list[float | None],
        font: QFont,
        stop: float,
    ) -> list[tuple[QRectF, int, str]]:
        # The labels of the major level where they fit the axis (as pyqtgraph places them).
        left = self.orientation == "left"
        step, values = level
        strings = self.tickStrings(values, self.autoSIPrefixScale * self.scale, step)
        measure = self._measure(font)
        style = self.style
        text_offset = max(0, style["tickLength"]) + style["tickTextOffset"][0 if left else 1]
        limit = self.boundingRect()
        if left:
            flags = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        else:
            flags = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
        flag = int(flags | Qt.TextFlag.TextDontClip)
        out: list[tuple[QRectF, int, str]] = []
        size2 = 0.0
        for x, text in zip(positions, strings, strict=True):
            if x is None:
                continue
            width, height = measure(text)
            size2 = max(size2, width if left else height)
            if left:
                rect = QRectF(stop - text_offset - width, x - height / 2, width, height)
            else:
                rect = QRectF(x - width / 2, stop + text_offset, width, height)
            if limit & rect == rect:
                out.append((rect, flag, text))
        self._updateMaxTextSize(size2)
        return out

    def _level_alpha(self, level: int, n_ticks: int, length: float) -> float:
        # pyqtgraph's tick alpha of a level: fainter for minor levels and for dense grids.
        alpha = self.style["tickAlpha"]
        if alpha is None:
            alpha = 255 / (level + 1)
            if self.grid is not False:
                alpha *= self.grid / 255.0 * min(max(0.05 * length / (n_ticks + 1), 0.0), 1.0)
            return float(alpha)
        if isinstance(alpha, float):
            return float(min(255, max(0, round(alpha * 255))))
        return float(alpha)

    def _level_pen(self, base: QPen, alpha: float) -> QPen:
        # The tick pen at ``alpha``, mixed opaque over the background; cached per colour.
        c = base.color()
        key = (c.rgba(), int(alpha), self.background.rgba(), base.widthF())
        pen = self._pens.get(key)
        if pen is None:
            if len(self._pens) > 64:
                self._pens.clear()
            pen = QPen(base)
            f = int(alpha) / 255.0
            bg = self.background
            pen.setColor(
                QColor(
                    round(c.red() * f + bg.red() * (1 - f)),
                    round(c.green() * f + bg.green() * (1 - f)),
                    round(c.blue() * f + bg.blue() * (1 - f)),
                )
            )
            self._pens[key] = pen
        return pen

    def _measure(self, font: QFont) -> Callable[[str], tuple[float, float]]:
        # Label size as pyqtgraph measures it (the bounding rect, 80 % of its height), cached.
        key = font.key()
        if key != self._font_key:
            self._font_key = key
            self._metrics = QFontMetricsF(font)
            self._sizes.clear()
        metrics, sizes = self._metrics or QFontMetricsF(font), self._sizes
        box = QRectF(0, 0, 100, 100)

        def measure(text: str) -> tuple[float, float]:
            size = sizes.get(text)
            if size is None:
                if len(sizes) > 4096:
                    sizes.clear()
                br = metrics.boundingRect(box, int(Qt.AlignmentFlag.AlignCenter), text)
                size = sizes[text] = (br.width(), br.height() * 0.8)
            return size

        return measure

    def _opaque(self, specs: Any) -> Any:
        """Return pyqtgraph's specs with every translucent tick pen made opaque."""
        if specs is None:
            return None
        axis, ticks, texts = specs
        out = []
        for pen, p1, p2 in ticks:
            a = pen.color().alpha()
            out.append((self._level_pen(pen, a) if a < 255 else pen, p1, p2))
        return axis, out, texts


def _hairline(pen: QPen, world: QTransform) -> bool:
    """Return whether ``pen`` draws opaque solid one-pixel lines under ``world`` (a shift)."""
    return (
        world.type().value <= QTransform.TransformationType.TxTranslate.value
        and pen.isCosmetic()
        and pen.widthF() == 1.0
        and pen.style() == Qt.PenStyle.SolidLine
        and pen.brush().style() == Qt.BrushStyle.SolidPattern
        and pen.color().alpha() == 255
    )


def _row_rects(lines: list[QLineF], dx: float, dy: float) -> list[QRect]:
    """Return the device pixels of horizontal hairlines shifted by ``dx, dy``, as rects."""
    out = []
    for line in lines:
        x0, x1 = sorted((line.x1(), line.x2()))
        left = math.floor(x0 + dx)
        out.append(QRect(left, math.floor(line.y1() + dy), math.floor(x1 + dx) - left + 1, 1))
    return out


def _near(values: npt.NDArray[np.float64], above: npt.NDArray[np.float64], tol: float) -> Any:
    """Return which ``values`` lie within ``tol`` of one of ``above`` (sorted)."""
    if above.shape[0] == 0 or values.shape[0] == 0:
        return np.zeros(values.shape[0], bool)
    i = np.clip(np.searchsorted(above, values), 1, above.shape[0] - 1)
    return np.minimum(np.abs(values - above[i - 1]), np.abs(values - above[i])) <= tol


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

    def tickValues(
        self, minVal: float, maxVal: float, size: float
    ) -> list[tuple[float, list[float]]]:
        """Return pyqtgraph's tick values: each level's, less those of the levels above.

        As pyqtgraph's own (a value within a hundredth of the step of one above is the
        same), found by bisecting the values above instead of comparing every pair
        (``np.isclose`` over a matrix: ~0.3 ms each time the price range changes).
        """
        if self.logMode:
            return list(super().tickValues(minVal, maxVal, size))
        lo, hi = sorted((minVal * self.scale, maxVal * self.scale))
        ticks: list[tuple[float, list[float]]] = []
        above = np.empty(0)
        for step, offset in self.tickSpacing(lo, hi, size):
            start = math.ceil((lo - offset) / step) * step + offset
            num = int((hi - start) / step) + 1
            values = (np.arange(num) * step + start) / self.scale
            values = values[~_near(values, above, step / self.scale * 0.01)]
            above = np.sort(np.concatenate([above, values]))
            ticks.append((step / self.scale, values.tolist()))
        return ticks

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
        """Put ticks at round clock times in the label zone (whole minutes, hours...).

        A minor level leaves out the times of the major one (drawn once, in the major
        grid's colour, as pyqtgraph's own levels are).
        """
        out: list[tuple[float, list[float]]] = []
        above: set[int] = set()
        for step, _ in self.tickSpacing(minVal, maxVal, size):
            step_ns = round(step * NS)
            t0 = self.to_ns(minVal)
            offset = 0
            if step >= 3600:
                off = datetime.fromtimestamp(t0 // NS, tz=self.tz).utcoffset()
                offset = int(off.total_seconds()) * NS if off else 0
            first = -(-(t0 + offset) // step_ns) * step_ns - offset
            n = int((maxVal - minVal) / step) + 2
            times = [first + k * step_ns for k in range(n) if first + k * step_ns not in above]
            above.update(times)
            values = [(t - self.origin_ns) / NS for t in times]
            out.append((step, [v for v in values if minVal <= v <= maxVal]))
        return out

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        """Clock labels in the selected zone."""
        return [format_ns(self.to_ns(v), self.tz, spacing) for v in values]
