# SPDX-License-Identifier: MIT
"""The console as a real process: smoke run, screenshot, signals, settings across instances."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QImage

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def console_env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "QWCONSOLE_CONFIG_DIR": str(tmp_path / "config"),
        "QWCONSOLE_STATE_DIR": str(tmp_path / "state"),
        "QT_QPA_PLATFORM": "offscreen",
    }
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def run_console(
    tmp_path: Path, *args: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=console_env(tmp_path),
        check=False,
    )


def test_smoke_runs_everything_and_exits_zero(tmp_path: Path) -> None:
    proc = run_console(tmp_path, "--smoke", "1.5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("qwconsole: smoke ok: ")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "config" / "qwconsole.ini").exists()  # smoke never writes settings


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_screenshot_renders_the_window_to_a_png(tmp_path: Path, theme: str) -> None:
    shot = tmp_path / "shots" / f"analyzer-{theme}.png"
    proc = run_console(
        tmp_path,
        "--screenshot",
        str(shot),
        "--workspace",
        "analyzer",
        "--theme",
        theme,
        "--after",
        "0.5",
        "--size",
        "1000x700",
    )
    assert proc.returncode == 0, proc.stderr
    image = QImage(str(shot))
    assert (image.width(), image.height()) == (1000, 700)
    # Real content: many distinct colours (text, icons), and the theme's background.
    samples = Counter(image.pixel(x, y) for x in range(0, 1000, 7) for y in range(0, 700, 7))
    assert len(samples) > 8
    # The most common colour is the background, wherever the content happens to sit.
    background = QColor.fromRgb(samples.most_common(1)[0][0])
    assert (background.lightness() < 60) if theme == "dark" else (background.lightness() > 200)


def start_console(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    log = tmp_path / "state" / "qwconsole.log"
    shown_before = log.read_text().count("window shown") if log.exists() else 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=console_env(tmp_path),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count("window shown") > shown_before:
            time.sleep(0.3)  # let the first heartbeat arrive
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"console exited early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("console did not show its window within 60 s")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_cleanly(tmp_path: Path, signum: signal.Signals) -> None:
    proc = start_console(tmp_path)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    log = (tmp_path / "state" / "qwconsole.log").read_text()
    assert f"received {signum.name}: shutting down" in log
    assert "engine embedded stopped" in log
    assert (tmp_path / "config" / "qwconsole.ini").exists()


def test_settings_persist_across_two_application_instances(tmp_path: Path) -> None:
    first = start_console(tmp_path, "--workspace", "manager", "--theme", "light")
    first.send_signal(signal.SIGTERM)
    first.communicate(timeout=30)
    assert first.returncode == 0
    ini = tmp_path / "config" / "qwconsole.ini"
    text = ini.read_text()
    assert "workspace=manager" in text
    assert "theme=light" in text
    # The second instance gets no options: what it saves on exit is what it restored.
    ini.write_text(text.replace("theme=light", "theme=light\n; restored by the second run"))
    second = start_console(tmp_path)
    second.send_signal(signal.SIGTERM)
    second.communicate(timeout=30)
    assert second.returncode == 0
    text2 = ini.read_text()
    assert "workspace=manager" in text2
    assert "theme=light" in text2
