# SPDX-License-Identifier: MIT
"""Which engine a ``.cfg`` file is written for: QuickFIX, QuickFIX/J, QuickFIX/Go or QuickFIX/n.

A comment line ``# dialect: quickfixgo`` states it (other engines ignore comments); otherwise a
key only one engine reads gives it away (:func:`dialect_of`). The dialect changes how a file is
read where the engines differ (QuickFIX/Go validates exactly when a dictionary is named, and
a session without StartTime and EndTime is always in session there).
"""

from __future__ import annotations

import re

from engine.fix.edit.document import CfgDocument

#: The engines whose ``.cfg`` dialect a file may be written in, and their display names.
DIALECTS: dict[str, str] = {
    "quickfix": "QuickFIX (C++)",
    "quickfixj": "QuickFIX/J",
    "quickfixgo": "QuickFIX/Go",
    "quickfixn": "QuickFIX/n",
}
#: A comment that states the dialect: ``# dialect: quickfixgo``.
DIALECT_COMMENT = re.compile(r"^\s*[#;]\s*dialect\s*[:=]\s*(\S+)\s*$", re.IGNORECASE)
#: Keys only one engine reads: a file that sets one is written for that engine.
_DIALECT_KEYS: dict[str, frozenset[str]] = {
    "quickfixgo": frozenset({
        "SOCKETPRIVATEKEYFILE", "SOCKETCERTIFICATEFILE", "SOCKETCAFILE",
        "SOCKETINSECURESKIPVERIFY", "SOCKETMINIMUMTLSVERSION", "SQLSTOREDRIVER",
        "SQLSTOREDATASOURCENAME", "MONGOSTORECONNECTION", "MONGOSTOREDATABASE",
        "DYNAMICSESSIONS",
    }),
    "quickfixj": frozenset({
        "SOCKETCONNECTPROTOCOL", "SOCKETACCEPTPROTOCOL", "JDBCDRIVER", "JDBCURL",
        "JDBCUSER", "SCREENLOGSHOWEVENTS", "FILESTORESYNC", "SOCKETKEYSTORE",
        "SOCKETTRUSTSTORE", "SLF4JLOGEVENTCATEGORY",
    }),
    "quickfixn": frozenset({"SSLENABLE", "SSLSERVERNAME", "SSLCERTIFICATE", "SSLPROTOCOLS"}),
}  # fmt: skip
#: Keys QuickFIX/Go never reads (it validates exactly when a dictionary is named).
GO_UNREAD = frozenset({"USEDATADICTIONARY"})


def dialect_of(document: CfgDocument) -> tuple[str, str]:
    """Return the file's dialect (a :data:`DIALECTS` key) and how it was found.

    A comment line ``# dialect: quickfixgo`` states it (other engines ignore comments);
    otherwise a key only one engine reads gives it away; otherwise QuickFIX (C++).
    """
    for line in document.lines:
        if line.kind == "comment":
            m = DIALECT_COMMENT.match(line.text)
            if m is not None and m[1].lower() in DIALECTS:
                return m[1].lower(), "stated in the file"
    for line in document.lines:
        if line.kind == "key":
            up = line.name.upper()
            for dialect, keys in _DIALECT_KEYS.items():
                if up in keys:
                    return dialect, f"inferred from {line.name}"
    return "quickfix", "default"
