# SPDX-License-Identifier: MIT
"""Chart items that cost a frame little: bounded by the view, lines and markers drawn lean.

:class:`ViewBounded` items report the chart's view as their bounds (the view box clips them
to it anyway) instead of pyqtgraph's scan of the data and of the pen's pixel padding, redone
after every range and data change. :class:`Polyline` draws a line through points as
pyqtgraph's curve does (the same path, or the same segments for a wide pen) without its
bookkeeping around every ``setData`` and paint. :class:`TradeMarkers` draws a few thousand
markers of a handful of whole-pixel sizes as pyqtgraph's scatter plot does in pixel mode
(the same sprites, one ``drawPixmapFragments`` call), without its per-point Python work: a
chart zoomed to single trades set ~300 markers a frame in 1-2 ms that way.
"""

from typing import Any

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from pyqtgraph.graphicsItems.PlotCurveItem import arrayToLineSegments
from pyqtgraph.graphicsItems.ScatterPlotItem import renderSymbol
from pyqtgraph.Qt import internals
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QImage, QPainter, QPainterPath, QPen, QPixmap

#: Sprite atlases by look (symbol, largest size, pixel ratio, pen, brush).
_ATLASES: dict[tuple[object, ...], tuple[QPixmap, npt.NDArray[np.float64]]] = {}


class ViewBounded(pg.GraphicsObject):
    """A chart item whose bounds are the chart's view, set by the chart after each redraw."""

    _view_rect = QRectF()

    def set_view_rect(self, rect: QRectF) -> None:
        """Bound the item by ``rect`` (the view's range, data coordinates) from now on."""
        if rect != self._view_rect:
            self.prepareGeometryChange()
            self._view_rect = rect

    def boundingRect(self) -> QRectF:
        """Return the view's range (data coordinates)."""
        return self._view_rect


class Polyline(ViewBounded):
    """A line through ``x, y`` in data coordinates, broken at NaN (``connect="finite"``).

    Drawn as pyqtgraph's ``PlotCurveItem`` draws it: one path, or, for an opaque solid pen
    wider than a pixel, the same segments in one ``drawLines`` call (pyqtgraph's
    "segmented line mode"); antialiased as pyqtgraph's configuration says.

    Parameters
    ----------
    name : str
        The item's name (pyqtgraph's ``name()``).
    """

    def __init__(self, name: str = "") -> None:
        super().__init__()
        self._name = name
        self._pen: QPen = pg.mkPen()
        self._antialias = bool(pg.getConfigOption("antialias"))
        self._x: npt.NDArray[np.float64] | None = None
        self._y: npt.NDArray[np.float64] | None = None
        self._path: QPainterPath | None = None
        self._segments: Any = None  # pyqtgraph's reusable QLineF array
        self._segments_for: object = None  # the data they were made of

    def name(self) -> str:
        """Return the item's name."""
        return self._name

    def setPen(self, pen: QPen) -> None:
        """Draw with ``pen`` (a QPen or anything ``pg.mkPen`` takes)."""
        self._pen = pg.mkPen(pen)
        self.update()

    def pen(self) -> QPen:
        """Return the pen the line is drawn with."""
        return self._pen

    def setData(self, x: npt.ArrayLike, y: npt.ArrayLike) -> None:
        """Draw the line through these points (NaN breaks it)."""
        xs = np.asarray(x, np.float64).ravel()
        ys = np.asarray(y, np.float64).ravel()
        if ys.shape != xs.shape:
            raise ValueError(f"x and y differ in length: {xs.shape[0]} and {ys.shape[0]}")
        self._x, self._y = xs, ys
        self._path = None
        self._segments_for = None
        self.update()

    def getData(self) -> tuple[npt.NDArray[np.float64] | None, npt.NDArray[np.float64] | None]:
        """Return the points (``None, None`` before the first :meth:`setData`)."""
        return self._x, self._y

    def _segmented(self) -> bool:
        pen = self._pen
        return (
            pen.widthF() > 1.0
            and pen.style() == Qt.PenStyle.SolidLine
            and pen.isSolid()
            and pen.color().alphaF() == 1.0
            and not self._antialias
        )

    def paint(self, p: QPainter, option: Any, widget: Any) -> None:
        """Stroke the line."""
        x, y = self._x, self._y
        if x is None or y is None or x.shape[0] == 0:
            return
        p.setRenderHint(QPainter.RenderHint.Antialiasing, self._antialias)
        p.setPen(self._pen)
        if self._segmented():
            if self._segments_for is not x:
                self._segments = arrayToLineSegments(
                    x, y, connect="finite", finiteCheck=True, out=self._segments
                )
                self._segments_for = x
            p.drawLines(*self._segments.drawargs())
            return
        if self._path is None:
            self._path = pg.arrayToQPath(x, y, connect="finite", finiteCheck=True)
        p.drawPath(self._path)


class TradeMarkers(ViewBounded):
    """Markers of one symbol, pen and brush at ``x, y``, each of a whole-pixel ``size``.

    Parameters
    ----------
    symbol : str
        A pyqtgraph symbol name (``"t"``, ``"t1"``, ``"o"``, ...).
    max_size : int
        Largest marker (px); sizes are clipped to ``[1, max_size]``.
    name : str
        The item's name (pyqtgraph's ``name()``).
    """

    def __init__(self, symbol: str, max_size: int, name: str = "") -> None:
        super().__init__()
        self.symbol = symbol
        self.max_size = max_size
        self._name = name
        self._pen = QPen()
        self._brush = QBrush()
        self.x: npt.NDArray[np.float64] = np.empty(0)
        self.y: npt.NDArray[np.float64] = np.empty(0)
        self.size: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self._atlas: tuple[QPixmap, npt.NDArray[np.float64], float] | None = None
        self._fragments = internals.PrimitiveArray(QPainter.PixmapFragment, 10)

    def name(self) -> str:
        """Return the item's name."""
        return self._name

    def setPen(self, pen: QPen) -> None:
        """Outline the markers with ``pen`` (a QPen or anything ``pg.mkPen`` takes)."""
        self._pen = pg.mkPen(pen)
        self._atlas = None
        self.update()

    def setBrush(self, brush: QBrush) -> None:
        """Fill the markers with ``brush`` (a QBrush or anything ``pg.mkBrush`` takes)."""
        self._brush = pg.mkBrush(brush)
        self._atlas = None
        self.update()

    def setData(self, x: npt.ArrayLike, y: npt.ArrayLike, size: npt.ArrayLike) -> None:
        """Show markers at ``x, y`` (data coordinates), ``size`` pixels across (rounded)."""
        xs = np.asarray(x, np.float64).ravel()
        ys = np.asarray(y, np.float64).ravel()
        if ys.shape != xs.shape:
            raise ValueError(f"x and y differ in length: {xs.shape[0]} and {ys.shape[0]}")
        given = np.asarray(size, np.float64)
        if given.ndim and given.shape != xs.shape:
            raise ValueError(f"{given.shape[0]} sizes for {xs.shape[0]} markers")
        sizes = np.clip(np.rint(np.broadcast_to(given, xs.shape)), 1, self.max_size)
        self.x, self.y, self.size = xs, ys, sizes.astype(np.int64)
        self.update()

    def clear(self) -> None:
        """Show no markers."""
        self.setData(np.empty(0), np.empty(0), np.empty(0))

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def _sprites(self, dpr: float) -> tuple[QPixmap, npt.NDArray[np.float64], float]:
        """Return the atlas of every size's sprite and each size's source rect in it.

        Shared by the items of the same look (the charts of a stack).
        """
        if self._atlas is not None and self._atlas[2] == dpr:
            return self._atlas
        pen, brush = self._pen, self._brush
        key = (
            self.symbol,
            self.max_size,
            dpr,
            pen.color().rgba(),
            pen.widthF(),
            pen.style().value,
            brush.color().rgba(),
            brush.style().value,
        )
        shared = _ATLASES.get(key)
        if shared is not None:
            self._atlas = (shared[0], shared[1], dpr)
            return self._atlas
        images = [
            renderSymbol(self.symbol, s, self._pen, self._brush, dpr=dpr)
            for s in range(1, self.max_size + 1)
        ]
        width = sum(im.width() for im in images)
        height = max(im.height() for im in images)
        sheet = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
        sheet.fill(Qt.GlobalColor.transparent)
        rects = np.zeros((self.max_size + 1, 4))
        p = QPainter(sheet)
        left = 0
        for s, im in enumerate(images, 1):
            im.setDevicePixelRatio(1.0)  # placed in device pixels
            p.drawImage(QPointF(left, 0), im)
            rects[s] = (left, 0, im.width(), im.height())
            left += im.width()
        p.end()
        if len(_ATLASES) >= 64:
            _ATLASES.clear()
        pixmap = QPixmap.fromImage(sheet)
        _ATLASES[key] = (pixmap, rects)
        self._atlas = (pixmap, rects, dpr)
        return self._atlas

    def paint(self, p: QPainter, option: Any, widget: Any) -> None:
        """Draw the markers in view centred on their points, at their pixel size."""
        n = self.x.shape[0]
        if n == 0:
            return
        dpr = widget.devicePixelRatioF() if widget is not None else 1.0
        atlas, rects, _ = self._sprites(dpr)
        t = p.transform()
        px = t.m11() * self.x + t.m21() * self.y + t.m31()
        py = t.m12() * self.x + t.m22() * self.y + t.m32()
        # Only those whose sprite reaches the device (Qt would clip the others).
        device = p.device()
        reach = self.max_size
        w = device.width() / device.devicePixelRatio()
        h = device.height() / device.devicePixelRatio()
        shown = (px > -reach) & (px < w + reach) & (py > -reach) & (py < h + reach)
        k = int(np.count_nonzero(shown))
        if k == 0:
            return
        p.resetTransform()
        self._fragments.resize(k)
        frags = self._fragments.ndarray()
        frags[:, 0] = px[shown]
        frags[:, 1] = py[shown]
        frags[:, 2:6] = rects[self.size[shown]]
        frags[:, 6:10] = (1 / dpr, 1 / dpr, 0.0, 1.0)  # scale x, y, rotation, opacity
        # (PySide's overload: the first fragment, their count, the pixmap)
        p.drawPixmapFragments(*self._fragments.drawargs(), atlas)  # type: ignore[call-arg]
