# SPDX-License-Identifier: MIT
"""What a bad file met at an entry point raises, and how it is said in one line (issue 16).

Every entry point (the ``qwconsole`` subcommands, the console's start, the engine's start)
catches :func:`bad_file_errors` around the step that reads the user's files and reports
:func:`one_line` of the error with exit status 2: each of these errors already names the file,
the line or record, and the reason. ``docs/bad-input.md`` lists the cases tried.
"""

from __future__ import annotations


def bad_file_errors() -> tuple[type[Exception], ...]:
    """Return the errors of a bad file the engine reads at start.

    A FIX dictionary or ``.cfg`` with errors, a damaged journal, a damaged tick store, an
    unreadable certificate or token store. Imported on call: the modules are not all needed
    by every caller.
    """
    from engine.fix.dictionary import DictionaryError
    from engine.fix.settings import SettingsError
    from engine.fix.store import StoreError
    from engine.journal import JournalError
    from engine.remote.tls import TlsError
    from engine.remote.tokens import TokenError
    from engine.tickstore.days import TickStoreError

    return (
        DictionaryError, SettingsError, StoreError, JournalError, TlsError, TokenError,
        TickStoreError,
    )  # fmt: skip


def one_line(error: BaseException) -> str:
    """Return ``error``'s first line, saying how many more there are."""
    lines = str(error).splitlines() or [type(error).__name__]
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return lines[0] + more


__all__ = ["bad_file_errors", "one_line"]
