# SPDX-License-Identifier: MIT
"""The OUCH wing's section of an engine configuration: ``[[ouch]]``, one table per account.

::

    [[ouch]]                          # OUCH 5.0 order entry over SoupBinTCP 4.x
    name = "NASDAQ"                   # the venue's name; instruments[].venue names it
    host = "10.1.2.3"
    port = 15000
    username = "QWC1"                 # SoupBinTCP: 1-6 letters or digits
    password_env = "OUCH_PASSWORD"    # where the password is (never in the file); or password
    session = ""                      # SoupBinTCP session ("": the current one)
    firm = "QWCN"                     # the Firm appendage of Enter Orders ("": none)
    busy_poll_us = 0                  # poll the socket this long after traffic (costs a core)

    [[instruments]]
    symbol = "AAPL"
    tick_size = "0.01"
    venue = "NASDAQ"                  # orders over that OUCH account instead of a FIX session

The engine keeps the account's next expected sequence number and UserRefNum in its
``[files] store_dir`` (``ouch-<name>.ouchstate``).
"""

import re
from dataclasses import dataclass

#: A SoupBinTCP username: 1-6 letters or digits.
USERNAME = re.compile(r"^[A-Za-z0-9]{1,6}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class OuchAccountConfig:
    """One OUCH account of the engine (a ``[[ouch]]`` table)."""

    name: str
    host: str
    port: int
    username: str
    password: str = ""
    password_env: str = ""
    session: str = ""
    firm: str = ""
    busy_poll_us: int = 0

    @property
    def keys(self) -> tuple[str, ...]:
        """Return the table's keys in the order they are written."""
        return (
            "name",
            "host",
            "port",
            "username",
            "password",
            "password_env",
            "session",
            "firm",
            "busy_poll_us",
        )
