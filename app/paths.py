# SPDX-License-Identifier: MIT
"""Where things live: bundled resources and the user's config, state and cache folders.

Follows the XDG base-directory convention on Linux; every folder can be overridden by an
environment variable (``QWCONSOLE_CONFIG_DIR``, ``QWCONSOLE_STATE_DIR``), which tests use to
keep each run apart.
"""

import os
import sys
from pathlib import Path

APP_NAME = "qwconsole"


def resources_dir() -> Path:
    """Return the folder of the ``resources`` package (source tree, wheel or frozen bundle)."""
    import resources

    return Path(resources.__file__).resolve().parent


def resource(*parts: str) -> Path:
    """Return the path of a bundled resource; raise ``FileNotFoundError`` naming it if absent."""
    path = resources_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"bundled resource {path} is missing")
    return path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var, "")
    base = Path(value) if value and Path(value).is_absolute() else Path.home() / fallback
    return base / APP_NAME


def config_dir() -> Path:
    """Return the user's settings folder (``$XDG_CONFIG_HOME/qwconsole``)."""
    override = os.environ.get("QWCONSOLE_CONFIG_DIR")
    return Path(override) if override else _xdg("XDG_CONFIG_HOME", ".config")


def state_dir() -> Path:
    """Return the folder for logs and journals (``$XDG_STATE_HOME/qwconsole``)."""
    override = os.environ.get("QWCONSOLE_STATE_DIR")
    return Path(override) if override else _xdg("XDG_STATE_HOME", ".local/state")


def cache_dir() -> Path:
    """Return the per-user cache folder (``$XDG_CACHE_HOME/qwconsole``)."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def is_frozen() -> bool:
    """Return whether this is a bundled (PyInstaller) build."""
    return bool(getattr(sys, "frozen", False))
