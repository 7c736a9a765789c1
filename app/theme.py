# SPDX-License-Identifier: MIT
"""Dark and light themes from ``resources/themes``: a QPalette plus one templated style sheet."""

import string
import tomllib
from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from app.paths import resource

#: Theme names in menu order; the first is the default.
THEMES = ("dark", "light")
DEFAULT_THEME = THEMES[0]

_ROLES: dict[str, QPalette.ColorRole] = {
    "window": QPalette.ColorRole.Window,
    "window_text": QPalette.ColorRole.WindowText,
    "base": QPalette.ColorRole.Base,
    "alternate_base": QPalette.ColorRole.AlternateBase,
    "text": QPalette.ColorRole.Text,
    "button": QPalette.ColorRole.Button,
    "button_text": QPalette.ColorRole.ButtonText,
    "highlight": QPalette.ColorRole.Highlight,
    "highlighted_text": QPalette.ColorRole.HighlightedText,
    "tooltip_base": QPalette.ColorRole.ToolTipBase,
    "tooltip_text": QPalette.ColorRole.ToolTipText,
    "placeholder_text": QPalette.ColorRole.PlaceholderText,
    "link": QPalette.ColorRole.Link,
}


@dataclass(frozen=True, slots=True)
class Theme:
    """A theme as loaded from its TOML file."""

    name: str
    label: str
    palette_colors: dict[str, str]
    colors: dict[str, str]

    def palette(self) -> QPalette:
        """Build the QPalette of this theme."""
        pal = QPalette()
        for key, role in _ROLES.items():
            pal.setColor(role, QColor(self.palette_colors[key]))
        disabled = QColor(self.palette_colors["disabled_text"])
        for role in (
            QPalette.ColorRole.Text,
            QPalette.ColorRole.WindowText,
            QPalette.ColorRole.ButtonText,
        ):
            pal.setColor(QPalette.ColorGroup.Disabled, role, disabled)
        return pal

    def style_sheet(self) -> str:
        """Fill ``themes/base.qss`` with this theme's colours."""
        template = string.Template(resource("themes", "base.qss").read_text(encoding="utf-8"))
        return template.substitute({**self.palette_colors, **self.colors})


def load_theme(name: str) -> Theme:
    """Load ``resources/themes/<name>.toml``; raise ``ValueError`` naming file and key."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; choose one of {', '.join(THEMES)}")
    path = resource("themes", f"{name}.toml")
    with path.open("rb") as f:
        data = tomllib.load(f)
    try:
        palette_colors = {str(k): str(v) for k, v in data["palette"].items()}
        colors = {str(k): str(v) for k, v in data["colors"].items()}
        label = str(data["label"])
    except KeyError as e:
        raise ValueError(f"{path}: missing key {e.args[0]!r}") from None
    missing = [*(k for k in _ROLES if k not in palette_colors)]
    if "disabled_text" not in palette_colors:
        missing.append("disabled_text")
    if missing:
        raise ValueError(f"{path}: [palette] lacks {', '.join(missing)}")
    bad = [f"{k}={v}" for k, v in {**palette_colors, **colors}.items() if not QColor(v).isValid()]
    if bad:
        raise ValueError(f"{path}: not a colour: {', '.join(bad)}")
    return Theme(name=name, label=label, palette_colors=palette_colors, colors=colors)


def apply_theme(app: QApplication, theme: Theme) -> None:
    """Make ``theme`` the application's palette and style sheet."""
    app.setStyle("Fusion")
    app.setPalette(theme.palette())
    app.setStyleSheet(theme.style_sheet())
