# SPDX-License-Identifier: MIT
"""Repaint a pyqtgraph plot and emit Qt signals thousands of times in one process.

PySide6 6.12.0 on CPython 3.11 drops a reference to ``True`` on every ``Signal.emit`` and the
interpreter aborts after a few hundred (platform-facts.md 3.1). Exit 0 when the reference
counts of ``True`` and ``None`` stay put; a bad build aborts or exits 1.
"""

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

N = int(sys.argv[1]) if len(sys.argv) > 1 else 5000


class Emitter(QObject):
    plain = Signal()
    flag = Signal(bool)
    payload = Signal(object)


def main() -> int:
    app = QApplication.instance() or QApplication([])
    plot = pg.PlotWidget()
    plot.resize(400, 300)
    plot.show()
    curve = plot.plot(np.zeros(100))
    emitter = Emitter()
    received = [0]

    def count(*_args: object) -> None:
        received[0] += 1

    emitter.plain.connect(count)
    emitter.flag.connect(count)
    emitter.payload.connect(count)
    true_before, none_before = sys.getrefcount(True), sys.getrefcount(None)
    x = np.arange(100, dtype=float)
    for i in range(N):
        emitter.plain.emit()
        emitter.flag.emit(i % 2 == 0)
        emitter.payload.emit(None)
        if i % 5 == 0:
            curve.setData(x, np.sin(x / 10 + i / 50))
            plot.repaint()
            app.processEvents()
    true_after, none_after = sys.getrefcount(True), sys.getrefcount(None)
    drift_true, drift_none = true_before - true_after, none_before - none_after
    print(
        f"emits={3 * N} received={received[0]} repaints={N // 5} "
        f"True drift={drift_true} None drift={drift_none}"
    )
    if received[0] != 3 * N:
        return 1
    # A leak is one reference per emit; allow a little slack for unrelated objects.
    return 1 if max(drift_true, drift_none) > N // 10 else 0


if __name__ == "__main__":
    sys.exit(main())
