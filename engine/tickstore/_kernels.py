# SPDX-License-Identifier: MIT
"""CSV parsing kernel of the generic importer: text columns straight to int64 ticks, lots, ns.

:func:`csv_parse` walks a block of whole lines once. For every line it splits on the
delimiter, converts the wanted columns (``conv`` codes below) into ``out`` and records the
line number; a field that does not convert marks its line bad (the row is not emitted) and is
recorded in ``errs`` as (line, field, start, end, code), so the caller can name file, line,
column and value. Numbers are exact: decimals become integers in nano-units (9 places) before
they are divided by the tick or lot size, and a remainder is an error, never a rounding.
"""

import numpy as np
import numpy.typing as npt

from engine.jit import kernel, kernel_inline

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

# Conversion codes (``conv``) and their parameter (``param``).
CONV_INT = 0  # integer text
CONV_DECIMAL = 1  # decimal text -> integer steps; param = step in nano-units (tick/lot size)
CONV_TIME_NUM = 2  # epoch number (decimals allowed) -> ns; param = ns per unit
CONV_TIME_ISO = 3  # ISO-8601 date-time (UTC unless an offset is given) -> ns
CONV_SIDE = 4  # B/BUY/BID/1 -> 1, S/SELL/A/ASK/-1 -> -1, N/0/empty -> 0
CONV_MAKER = 5  # buyer-is-maker flag (1/true) -> aggressor side: 1/true -> -1, 0/false -> 1
#: decimal or scientific text rounded to the nearest step (``--round-to-tick``): float
#: artifacts such as ``0.00031099999999999997`` and ``2e-06``; a value more than 1% of a step
#: off the grid is still refused (not an artifact). param = step in nano-units.
CONV_DECIMAL_ROUND = 6

# Error codes (``errs[:, 4]``).
ERR_NUMBER = 1
ERR_GRID = 2
ERR_TIME = 3
ERR_MISSING = 4
ERR_SIDE = 5
ERR_RANGE = 6

_NANO = 1_000_000_000
_INT64_MAX = 9_223_372_036_854_775_807
_MAX_WHOLE = 9_223_372_035  # largest whole part that fits in int64 nano-units


@kernel_inline
def _decimal(buf: U8, s: int, e: int) -> tuple[int, int]:  # noqa: C901 (flat byte loop)
    """Parse decimal text in ``buf[s:e]`` to nano-units; return (value, error code)."""
    while s < e and buf[s] == 32:
        s += 1
    while e > s and buf[e - 1] == 32:
        e -= 1
    if s >= e:
        return 0, ERR_NUMBER
    neg = False
    if buf[s] == 45 or buf[s] == 43:
        neg = buf[s] == 45
        s += 1
    whole = 0
    digits = 0
    i = s
    while i < e and 48 <= buf[i] <= 57:
        whole = whole * 10 + (buf[i] - 48)
        digits += 1
        if whole > _MAX_WHOLE:
            return 0, ERR_RANGE
        i += 1
    frac = 0
    places = 0
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            d = buf[i] - 48
            if places < 9:
                frac = frac * 10 + d
                places += 1
            elif d != 0:
                return 0, ERR_RANGE  # finer than 1e-9
            digits += 1
            i += 1
    if i != e or digits == 0:
        return 0, ERR_NUMBER
    while places < 9:
        frac *= 10
        places += 1
    v = whole * _NANO + frac
    return (-v if neg else v), 0


@kernel_inline
def _decimal_sci(buf: U8, s: int, e: int) -> tuple[int, int]:  # noqa: C901 (flat byte loop)
    """Parse decimal or scientific text to nano-units, rounded half up; (value, error code).

    Any number of places and an exponent (``1.5e-3``, ``2E+06``) are accepted; up to 18
    significant digits are kept, the rest only round.
    """
    while s < e and buf[s] == 32:
        s += 1
    while e > s and buf[e - 1] == 32:
        e -= 1
    if s >= e:
        return 0, ERR_NUMBER
    neg = False
    if buf[s] == 45 or buf[s] == 43:
        neg = buf[s] == 45
        s += 1
    mant = 0  # significant digits kept
    scale = 0  # power of ten of mant's last digit
    kept = 0
    digits = 0
    round_up = False  # the first dropped digit was >= 5
    dropped = False
    dot = False
    i = s
    while i < e:
        c = buf[i]
        if c == 46 and not dot:
            dot = True
        elif 48 <= c <= 57:
            digits += 1
            d = c - 48
            if kept < 18:
                if mant or d:
                    mant = mant * 10 + d
                    kept += 1
                if dot:
                    scale -= 1
            else:
                if not dropped:
                    round_up = d >= 5
                    dropped = True
                if not dot:
                    scale += 1
        else:
            break
        i += 1
    if digits == 0:
        return 0, ERR_NUMBER
    if i < e:  # an exponent
        if buf[i] != 101 and buf[i] != 69:
            return 0, ERR_NUMBER
        i += 1
        eneg = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        ex = 0
        nd = 0
        while i < e and 48 <= buf[i] <= 57:
            ex = ex * 10 + (buf[i] - 48)
            nd += 1
            if ex > 400:
                return 0, ERR_RANGE
            i += 1
        if nd == 0 or i != e:
            return 0, ERR_NUMBER
        scale += -ex if eneg else ex
    if round_up:
        mant += 1
    p = scale + 9  # mant * 10**p nano-units
    if mant == 0:
        return 0, 0
    if p >= 0:
        if p > 18:
            return 0, ERR_RANGE
        f = 1
        for _ in range(p):
            f *= 10
        if mant > _INT64_MAX // f:
            return 0, ERR_RANGE
        v = mant * f
    else:
        if -p > 19:
            return 0, 0
        f = 1
        for _ in range(-p):
            f *= 10
        v = (mant + f // 2) // f
    return (-v if neg else v), 0


@kernel_inline
def _int(buf: U8, s: int, e: int) -> tuple[int, int]:
    while s < e and buf[s] == 32:
        s += 1
    while e > s and buf[e - 1] == 32:
        e -= 1
    if s >= e:
        return 0, ERR_NUMBER
    neg = False
    if buf[s] == 45 or buf[s] == 43:
        neg = buf[s] == 45
        s += 1
    if s >= e:
        return 0, ERR_NUMBER
    v = 0
    for i in range(s, e):
        c = buf[i]
        if not 48 <= c <= 57:
            return 0, ERR_NUMBER
        if v > (_INT64_MAX - (c - 48)) // 10:
            return 0, ERR_RANGE
        v = v * 10 + (c - 48)
    return (-v if neg else v), 0


@kernel_inline
def _time_num(buf: U8, s: int, e: int, ns_per_unit: int) -> tuple[int, int]:
    """Parse an epoch number in units of ``ns_per_unit`` (decimals allowed) to ns."""
    dot = e
    for i in range(s, e):
        if buf[i] == 46:
            dot = i
            break
    whole, err = _int(buf, s, dot)
    if err:
        return 0, err
    ns = whole * ns_per_unit
    scale = ns_per_unit
    for i in range(dot + 1, e):
        c = buf[i]
        if not 48 <= c <= 57:
            return 0, ERR_NUMBER
        scale //= 10
        ns += (c - 48) * scale
    return ns, 0


@kernel_inline
def _digits(buf: U8, s: int, n: int) -> int:
    v = 0
    for i in range(s, s + n):
        c = buf[i]
        if not 48 <= c <= 57:
            return -1
        v = v * 10 + (c - 48)
    return v


@kernel_inline
def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@kernel_inline
def _time_iso(buf: U8, s: int, e: int) -> tuple[int, int]:  # noqa: C901 (flat byte checks)
    """Parse ``YYYY-MM-DD[T ]HH:MM:SS[.f{1,9}][Z|±HH:MM]`` to ns since the epoch (UTC)."""
    while s < e and buf[s] == 32:
        s += 1
    while e > s and buf[e - 1] == 32:
        e -= 1
    if e - s < 19 or buf[s + 4] != 45 or buf[s + 7] != 45:
        return 0, ERR_TIME
    if (buf[s + 10] != 84 and buf[s + 10] != 32) or buf[s + 13] != 58 or buf[s + 16] != 58:
        return 0, ERR_TIME
    y, mo, d = _digits(buf, s, 4), _digits(buf, s + 5, 2), _digits(buf, s + 8, 2)
    h, mi, sec = _digits(buf, s + 11, 2), _digits(buf, s + 14, 2), _digits(buf, s + 17, 2)
    if min(y, mo, d, h, mi, sec) < 0 or not (1 <= mo <= 12 and 1 <= d <= 31):
        return 0, ERR_TIME
    if h > 23 or mi > 59 or sec > 60:
        return 0, ERR_TIME
    i = s + 19
    frac = 0
    if i < e and buf[i] == 46:
        i += 1
        scale = 100_000_000
        n = 0
        while i < e and 48 <= buf[i] <= 57:
            if n < 9:
                frac += (buf[i] - 48) * scale
                scale //= 10
            n += 1
            i += 1
        if n == 0:
            return 0, ERR_TIME
    offset = 0
    if i < e:
        c = buf[i]
        if c == 90 and i + 1 == e:
            pass
        elif (c == 43 or c == 45) and e - i == 6 and buf[i + 3] == 58:
            oh, om = _digits(buf, i + 1, 2), _digits(buf, i + 4, 2)
            if oh < 0 or om < 0:
                return 0, ERR_TIME
            offset = (oh * 3600 + om * 60) * (1 if c == 43 else -1)
        else:
            return 0, ERR_TIME
    days = _days_from_civil(y, mo, d)
    secs = days * 86400 + h * 3600 + mi * 60 + sec - offset
    return secs * _NANO + frac, 0


@kernel_inline
def _side(buf: U8, s: int, e: int, maker: bool) -> tuple[int, int]:  # noqa: C901 (codes)
    while s < e and buf[s] == 32:
        s += 1
    while e > s and buf[e - 1] == 32:
        e -= 1
    if maker:
        if s == e:
            return 0, ERR_SIDE
        c = buf[s] | 32
        if c == 49 or c == 116:  # "1", "true"
            return -1, 0
        if c == 48 or c == 102:  # "0", "false"
            return 1, 0
        return 0, ERR_SIDE
    if s == e:
        return 0, 0
    c = buf[s] | 32
    if c == 98:  # b, buy, bid
        return 1, 0
    if c == 115 or c == 97:  # s, sell, a, ask
        return -1, 0
    if c == 110 or c == 48:  # n, none, 0
        return 0, 0
    if c == 49:
        return 1, 0
    if buf[s] == 45 and e - s == 2 and buf[s + 1] == 49:
        return -1, 0
    return 0, ERR_SIDE


@kernel
def csv_parse(  # noqa: C901 (one flat pass over the bytes on purpose)
    buf: U8,
    delim: int,
    need: I64,
    conv: I64,
    param: I64,
    out: I64,
    lines: I64,
    first_line: int,
    errs: I64,
) -> tuple[int, int, int, int]:
    """Parse the whole lines of ``buf``; return (rows, lines read, errors, bytes consumed).

    ``need[col]`` is the output field of CSV column ``col`` (-1: not wanted); ``conv`` and
    ``param`` are per output field; ``out[field, row]`` receives the values and
    ``lines[row]`` the 1-based line number (``first_line`` for the first line of ``buf``).
    Parsing stops early, after a whole line, when ``errs`` (``int64[k, 5]``) is full.
    """
    n = buf.shape[0]
    n_fields = conv.shape[0]
    n_cols = need.shape[0]
    row = 0
    n_err = 0
    line = first_line
    pos = 0
    cap = errs.shape[0]
    while pos < n:
        c0 = buf[pos]
        if c0 == 10 or (c0 == 13 and pos + 1 < n and buf[pos + 1] == 10):  # empty line
            pos += 1 if c0 == 10 else 2
            line += 1
            continue
        # one pass over the line: each field is parsed as its end is found
        n_seen = 0
        bad = False
        col = 0
        s = pos
        end = n  # index of the line's "\n" (n if none)
        while True:
            e = s
            while e < n and buf[e] != delim and buf[e] != 10:
                e += 1
            eol = e >= n or buf[e] == 10
            fe = e - 1 if eol and e > s and buf[e - 1] == 13 else e
            f = need[col] if col < n_cols else -1
            if f >= 0:
                n_seen += 1
                c = conv[f]
                if c == CONV_DECIMAL:
                    v, err = _decimal(buf, s, fe)
                    if err == 0:
                        p = param[f]
                        q = v // p
                        if q * p != v:
                            err = ERR_GRID
                        v = q
                elif c == CONV_DECIMAL_ROUND:
                    v, err = _decimal_sci(buf, s, fe)
                    if err == 0:
                        p = param[f]
                        q = (v + p // 2) // p  # the nearest step
                        if abs(v - q * p) * 100 > p:
                            err = ERR_GRID
                        v = q
                elif c == CONV_INT:
                    v, err = _int(buf, s, fe)
                elif c == CONV_TIME_NUM:
                    v, err = _time_num(buf, s, fe, param[f])
                elif c == CONV_TIME_ISO:
                    v, err = _time_iso(buf, s, fe)
                else:
                    v, err = _side(buf, s, fe, c == CONV_MAKER)
                if err:
                    bad = True
                    if n_err < cap:
                        errs[n_err, 0] = line
                        errs[n_err, 1] = f
                        errs[n_err, 2] = s
                        errs[n_err, 3] = fe
                        errs[n_err, 4] = err
                    n_err += 1
                else:
                    out[f, row] = v
            col += 1
            if eol:
                end = e
                break
            s = e + 1
            if col >= n_cols:  # the rest of the line is not wanted
                while s < n and buf[s] != 10:
                    s += 1
                end = s
                break
        if not bad and n_seen < n_fields:
            stop = end - 1 if end > pos and buf[end - 1] == 13 else end
            for f in range(n_fields):  # name the first field whose column is missing
                k = -1
                for j in range(min(col, n_cols)):
                    if need[j] == f:
                        k = j
                if k < 0:
                    bad = True
                    if n_err < cap:
                        errs[n_err, 0] = line
                        errs[n_err, 1] = f
                        errs[n_err, 2] = pos
                        errs[n_err, 3] = stop
                        errs[n_err, 4] = ERR_MISSING
                    n_err += 1
                    break
        if not bad:
            lines[row] = line
            row += 1
        line += 1
        pos = end + 1
        if n_err >= cap:
            break
    return row, line - first_line, n_err, min(pos, n)
