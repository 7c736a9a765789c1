# SPDX-License-Identifier: MIT
"""FIX text into fields: the one splitter of every tool that reads messages (Qt-free).

Messages reach the tools as received (SOH between fields) or as people and logs write them:
``|``, ``^A`` or ``<SOH>`` in place of SOH, a timestamp before ``8=``, a line end after. The
message inspector, the dictionary editor's message check and the log scan all split with
:func:`split_fields`, so a message reads the same everywhere.
"""

from __future__ import annotations

__all__ = ["SOH", "split_fields"]

#: The field separator on the wire.
SOH = b"\x01"
#: What logs and pastes write in place of SOH, tried in this order when a text has no SOH.
STAND_INS: tuple[bytes, ...] = (b"<SOH>", b"^A", b"|")


def split_fields(data: bytes | str, *, from_begin: bool = False) -> list[tuple[int, bytes]]:
    """Return ``(tag, value)`` for every field of a FIX message, in order.

    Parameters
    ----------
    data : bytes or str
        The message (text is read as latin-1). Fields end with SOH; a text without any SOH may
        use one of ``<SOH>``, ``^A`` or ``|`` instead (the first of them it holds: with SOH
        present, or another stand-in chosen, a ``|`` is part of a value).
    from_begin : bool
        Skip whatever precedes the first ``8=`` (a log line's timestamp and prefix).

    Returns
    -------
    list of (int, bytes)
        Empty pieces and line ends are dropped; a piece without ``=``, or whose tag is not
        all digits, is kept whole as ``(-1, piece)``.
    """
    raw = data.encode("latin-1", "replace") if isinstance(data, str) else data
    if from_begin:
        start = raw.find(b"8=")
        if start > 0:
            raw = raw[start:]
    if SOH not in raw:
        for stand_in in STAND_INS:
            if stand_in in raw:
                raw = raw.replace(stand_in, SOH)
                break
    out: list[tuple[int, bytes]] = []
    for part in raw.split(SOH):
        part = part.strip(b"\r\n")
        if not part:
            continue
        tag, eq, value = part.partition(b"=")
        out.append((int(tag), value) if eq and tag.isdigit() else (-1, part))
    return out
