# SPDX-License-Identifier: MIT
"""``python -m app``: the same as the ``qwconsole`` command."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
