# SPDX-License-Identifier: MIT
"""Entry point of the bundle: the same as the ``qwconsole`` command.

Kept outside the packages so PyInstaller imports ``app`` as a package (platform-facts.md 7.3).
"""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
