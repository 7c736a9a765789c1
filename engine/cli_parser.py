# SPDX-License-Identifier: MIT
"""The argument parser of every ``qwconsole`` command: a bad argument is one line and exit 2."""

import argparse
import sys
from typing import NoReturn


class OneLineErrorParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (no usage block), exit status 2."""

    def error(self, message: str) -> NoReturn:
        """Print a one-line error and exit with status 2."""
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)
