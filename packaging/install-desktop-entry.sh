#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Add qwconsole to the desktop's application menu for the current user (no root needed).
#
#   ./install-desktop-entry.sh              from the bundle folder (dist/qwconsole)
#   ./install-desktop-entry.sh --uninstall  remove the menu entry and the icons again
#
# Copies share/applications/qwconsole.desktop (with Exec pointing at this bundle's executable)
# and the icons into $XDG_DATA_HOME (~/.local/share). Run it again after moving the bundle.
set -euo pipefail

BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
ENTRY="$DATA/applications/qwconsole.desktop"

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$ENTRY"
  find "$DATA/icons/hicolor" -path '*/apps/qwconsole.*' -delete 2>/dev/null || true
  echo "qwconsole: removed the menu entry and icons from $DATA"
  exit 0
fi
[ -x "$BUNDLE/qwconsole" ] || { echo "qwconsole: $BUNDLE/qwconsole not found; run this from the bundle folder" >&2; exit 1; }

mkdir -p "$DATA/applications"
(cd "$BUNDLE/share/icons" && find hicolor -type f -name 'qwconsole.*') | while read -r icon; do
  mkdir -p "$DATA/icons/$(dirname "$icon")"
  cp "$BUNDLE/share/icons/$icon" "$DATA/icons/$icon"
done
# Exec and TryExec must be absolute: the bundle is not on PATH.
sed -e "s|^Exec=.*|Exec=\"$BUNDLE/qwconsole\"|" -e "/^Exec=/a TryExec=$BUNDLE/qwconsole" \
  "$BUNDLE/share/applications/qwconsole.desktop" > "$ENTRY"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$DATA/applications" || true
# Refresh the user's icon cache only where one exists (never create one: a stale cache hides icons).
if [ -f "$DATA/icons/hicolor/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null; then
  gtk-update-icon-cache -q "$DATA/icons/hicolor" 2>/dev/null || true
fi
echo "qwconsole: menu entry $ENTRY -> $BUNDLE/qwconsole"
