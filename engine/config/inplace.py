# SPDX-License-Identifier: MIT
"""Edit an engine configuration file's text in place, keeping its comments, order and spelling.

:func:`update_config_text` is what the Manager saves with: it changes only the lines of what
changed between the configuration the text says and the new one, and falls back to
:func:`engine.config.writer.dump_config`'s text when the file uses shapes it cannot edit safely.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass, field

from engine.config.model import ConfigError, EngineConfig
from engine.config.reader import parse_config
from engine.config.writer import dump_config

_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9_-]+|\"(?:[^\"\\\\]|\\\\.)*\")(\s*=\s*)(.*)$")


@dataclass
class _Block:
    """One table of a TOML text: its header line (None before the first) and its body lines."""

    header: int | None
    name: str  # "[engine]", "[[strategies]]", "" before the first header
    #: Which element of its array of tables: ``("id", 7)`` by its identity key, else the
    #: position (0 for plain tables).
    ordinal: object
    parent: _Block | None = None  # the [[x]] element a [x.sub] table belongs to
    lead: list[int] = field(default_factory=list)  # the comment lines just above the header
    lines: list[int] = field(default_factory=list)  # line indices of the body
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> (first, last line)


def _toml_scalar(text: str) -> tuple[bool, object]:
    try:
        return True, tomllib.loads(f"x = {text}")["x"]
    except tomllib.TOMLDecodeError:
        return False, None


def _header_name(line: str) -> str | None:
    """Return ``[name]`` / ``[[name]]`` of a header line (spaces and comment removed), or None."""
    m = re.match(r"^\s*(\[\[?)\s*([^\]#]+?)\s*(\]\]?)\s*(#.*)?$", line)
    if m is None or len(m.group(1)) != len(m.group(3)):
        return None
    return f"{m.group(1)}{m.group(2)}{m.group(3)}"


def _key_name(raw: str) -> str:
    return str(next(iter(tomllib.loads(f"{raw} = 0"))))


def _blocks(lines: list[str]) -> list[_Block] | None:
    """Split ``lines`` into tables; None if the text uses shapes this editor does not keep."""
    blocks = [_Block(None, "", 0)]
    counts: dict[str, int] = {}
    parent = ""  # the array of tables a "[x.sub]" table belongs to
    element: _Block | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        name = _header_name(line)
        if name is not None:
            owner = None
            if name.startswith("[["):
                parent = name[2:-2]
                counts[name] = counts.get(name, 0) + 1
                ordinal = counts[name] - 1
            else:
                sub = bool(parent) and name[1:-1].startswith(parent + ".")
                ordinal = counts.get(f"[[{parent}]]", 0) - 1 if sub else 0
                owner = element if sub else None
                if not sub:
                    parent = ""
            blocks.append(_Block(i, name, max(ordinal, 0), owner))
            if name.startswith("[["):
                element = blocks[-1]
            i += 1
            continue
        block = blocks[-1]
        m = _KEY_LINE.match(line)
        if m is None:
            if line.strip() and not line.strip().startswith("#"):
                return None
            block.lines.append(i)
            i += 1
            continue
        first = i
        i = _value_end(lines, i, m.group(4))
        if i < 0:
            return None
        key = _key_name(m.group(2))
        if key in block.keys:
            return None
        block.keys[key] = (first, i)
        block.lines.extend(range(first, i + 1))
        i += 1
    _finish(lines, blocks)
    return blocks


def _finish(lines: list[str], blocks: list[_Block]) -> None:
    """Give each table the comments right above its header, and its identity."""
    for before, b in itertools.pairwise(blocks):
        # Comment lines right above a header (no blank line between) describe that table.
        while before.lines and lines[before.lines[-1]].strip().startswith("#"):
            b.lead.insert(0, before.lines.pop())
    for b in blocks:
        identity = _identity(lines, b.parent or b)
        if identity is not None:
            b.ordinal = identity


def _value_end(lines: list[str], first: int, value: str) -> int:
    """Return the last line of a value starting on line ``first`` (-1 if it never parses)."""
    i = first
    while not _value_part(value)[0] and i + 1 < len(lines) and i - first < 100:
        i += 1
        value += "\n" + lines[i]
    return i if _value_part(value)[0] is not None else -1


#: The key that tells the elements of an array of tables apart (matched by it, not position).
_IDENTITY = {"[[strategies]]": "id", "[[instruments]]": "symbol", "[[ouch]]": "name"}


def _identity(lines: list[str], b: _Block) -> tuple[str, object] | None:
    key = _IDENTITY.get(b.name)
    if key is None or key not in b.keys:
        return None
    a, z = b.keys[key]
    m = _KEY_LINE.match(lines[a])
    assert m is not None
    value = _value_part("\n".join([m.group(4), *lines[a + 1 : z + 1]]))[0]
    ok, v = _toml_scalar(value or "")
    return (key, v) if ok else None


def _value_part(rest: str) -> tuple[str | None, str]:
    """Split what follows ``=`` into the value and a trailing ``# comment`` (None: no value)."""
    for m in re.finditer("#", rest):
        if _toml_scalar(rest[: m.start()])[0]:
            return rest[: m.start()], rest[m.start() :]
    return (rest, "") if _toml_scalar(rest)[0] else (None, "")


_Pairs = dict[tuple[str, object], dict[str, str]]


def _dumped(cfg: EngineConfig) -> tuple[list[tuple[str, object]], _Pairs]:
    """Return the tables of :func:`dump_config`'s text in order, and their ``key = value`` lines."""
    lines = dump_config(cfg).splitlines()
    blocks = _blocks(lines)
    assert blocks is not None  # dump_config writes nothing else
    order = [(b.name, b.ordinal) for b in blocks[1:]]
    pairs = {
        (b.name, b.ordinal): {k: "\n".join(lines[a : z + 1]) for k, (a, z) in b.keys.items()}
        for b in blocks[1:]
    }
    return order, pairs


def update_config_text(text: str, cfg: EngineConfig) -> str:
    """Return ``text`` changed to say ``cfg``, keeping its comments and untouched lines.

    Only what differs between the configuration ``text`` says and ``cfg`` is edited: a changed
    value is written before the line's comment, a key now absent loses its line, a new key goes
    after the last key of its table, a new table after the last one of its kind, and a table no
    longer there goes. Everything else, comments and blank lines included, stays as written.
    Text this cannot edit safely (inline tables, dotted keys, a key written twice, a file that
    does not parse) and any result that would not read back as ``cfg`` give
    :func:`dump_config`'s text instead.
    """
    fresh = dump_config(cfg)
    try:
        before = parse_config(text, cfg.source)
    except ConfigError:
        return fresh
    if dump_config(before) == fresh:
        return text
    lines = text.splitlines()
    blocks = _blocks(lines)
    if blocks is None or blocks[0].keys:
        return fresh
    merged = _merge(lines, blocks, _dumped(before)[1], *_dumped(cfg))
    out = "\n".join(merged) + "\n"
    try:
        same = dump_config(parse_config(out, cfg.source)) == fresh
    except ConfigError:
        same = False
    return out if same else fresh


def _family(name: str) -> str:
    return name.strip("[]").split(".")[0]


def _merge(
    lines: list[str],
    blocks: list[_Block],
    old: _Pairs,
    order: list[tuple[str, object]],
    new: _Pairs,
) -> list[str]:
    chunks: list[tuple[str, list[str]]] = [("", [lines[i] for i in blocks[0].lines])]
    present = set()
    for b in blocks[1:]:
        bid = (b.name, b.ordinal)
        if bid not in new:
            continue  # the table went (with its comments)
        present.add(bid)
        assert b.header is not None
        body = _merge_body(lines, b, old[bid], new[bid])
        chunks.append((b.name, [*(lines[i] for i in b.lead), lines[b.header], *body]))
    for bid in order:
        was = old.get(bid, {})
        added = [line for k, line in new[bid].items() if line != was.get(k)]
        if bid in present or (bid in old and not added):
            continue  # a table the text leaves to its defaults, still at its defaults
        at = max(
            (i for i, (name, _) in enumerate(chunks) if _family(name) == _family(bid[0])),
            default=len(chunks) - 1,
        )
        prev = chunks[at][1]
        while prev and not prev[-1].strip():
            prev.pop()
        chunks.insert(at + 1, (bid[0], [bid[0], *(added if bid in old else new[bid].values()), ""]))
        prev.append("")
    out = [line for _, body in chunks for line in body]
    while out and not out[-1].strip():
        out.pop()
    return out


def _merge_body(lines: list[str], b: _Block, old: dict[str, str], new: dict[str, str]) -> list[str]:
    body: list[str] = []
    last_key = -1
    starts = {a: k for k, (a, _z) in b.keys.items()}
    inside = {i for a, z in b.keys.values() for i in range(a + 1, z + 1)}
    for i in b.lines:
        if i in inside:
            continue
        key = starts.get(i)
        if key is None:
            body.append(lines[i])
            continue
        a, z = b.keys[key]
        if key in new and new[key] != old.get(key):
            body.append(_rewrite(lines[a : z + 1], new[key]))
        elif key in new or key not in old:
            body.append("\n".join(lines[a : z + 1]))
        else:
            continue  # the key went
        last_key = len(body)
    extra = [line for k, line in new.items() if k not in b.keys and line != old.get(k)]
    at = last_key if last_key >= 0 else len(body) - _trailing_blank(body)
    body[at:at] = extra
    return body


def _trailing_blank(body: list[str]) -> int:
    n = 0
    while n < len(body) and not body[len(body) - 1 - n].strip():
        n += 1
    return n


def _rewrite(old: list[str], new_line: str) -> str:
    """Return the key's old line(s) with the new value, keeping the key's spelling and comment."""
    m = _KEY_LINE.match(old[0])
    n = _KEY_LINE.match(new_line)
    assert m is not None
    assert n is not None
    value, comment = _value_part("\n".join([m.group(4), *old[1:]]))
    assert value is not None
    pad = value[len(value.rstrip()) :] if comment else ""
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{n.group(4)}{pad}{comment}"
