# SPDX-License-Identifier: MIT
"""FIX messages as the session layer and applications see them.

:class:`FixMessage` is a decoded inbound message: a view of the received bytes with the tag and
value offsets found by the framing kernel, values handed out as ``bytes`` on demand.
:class:`OutMessage` is an outbound message being built: MsgType, extra header fields and a body
of fields and :class:`Group` s, encoded by :func:`engine.fix.codec.encode`.

Neither class validates against a data dictionary; that is ``engine.fix.validation``'s job.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Final, TypeAlias

#: Field separator.
SOH: bytes = b"\x01"

#: Standard header tags of FIX 4.0 - 5.0 SP2 / FIXT.1.1 (the union of the specifications).
HEADER_TAGS: frozenset[int] = frozenset(
    {
        8, 9, 35, 49, 56, 115, 128, 90, 91, 34, 50, 142, 57, 143, 116, 144, 129, 145, 43, 97,
        52, 122, 212, 213, 347, 369, 627, 628, 629, 630, 1128, 1129, 1156,
    }
)  # fmt: skip
#: Standard trailer tags.
TRAILER_TAGS: frozenset[int] = frozenset({93, 89, 10})
#: The first seven tags of a message in the standard header layout (see
#: :meth:`FixMessage.session_header`).
_STD_HEADER: array[int] = array("q", [8, 9, 35, 34, 49, 52, 56])
#: Tags from this one on (and negative ones) are this byte in a message's tag codes (see
#: :func:`make_messages`).
CODE_ESCAPE: Final = 255
#: Messages of at most this many fields answer :meth:`FixMessage.get` by scanning their tags;
#: longer ones build a tag index on the first lookup.
_SCAN_FIELDS: Final = 40
#: Messages whose fields share one set of lists in a :class:`FixMessage` (see there).
MESSAGES_PER_BLOCK: Final = 16
#: :meth:`FixMessage.get_many` compiles a plan per layout for messages of at most this many
#: fields; longer ones (and any beyond the caps below) are answered tag by tag.
_PLAN_FIELDS: Final = 64
#: At most this many layouts get a plan per tuple of tags, and this many plans in all (a
#: counterparty sending ever new layouts must not grow the cache without end).
_PLAN_LAYOUTS = 32
_PLAN_TOTAL = 2048
#: Session-level (admin) message types.
ADMIN_MSG_TYPES: frozenset[bytes] = frozenset({b"0", b"1", b"2", b"3", b"4", b"5", b"A"})

#: A field as ``(tag, value)``.
Field: TypeAlias = tuple[int, bytes]
#: A value accepted by the builders; converted with :func:`to_bytes`.
Value: TypeAlias = bytes | str | int | float | Decimal | bool


def to_bytes(value: Value) -> bytes:
    """Return the FIX wire form of ``value`` (``bool`` becomes ``Y``/``N``)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("latin-1")
    if isinstance(value, bool):
        return b"Y" if value else b"N"
    if isinstance(value, int):
        return b"%d" % value
    if isinstance(value, float):
        return repr(value).encode()
    return str(value).encode()


class Block:
    """What up to :data:`MESSAGES_PER_BLOCK` decoded messages share: bytes and field arrays.

    The decoder makes one per block of messages that arrived together, and a
    :class:`FixMessage` is a position in one: decoding into messages costs one small object
    per message. Nothing here changes once made (``bytes``, and arrays no one writes to;
    only ``checked`` may be refined, see below), so a message stays valid whatever the decoder
    does next; a message kept long keeps its block
    alive (about 14 KB for 16 ExecutionReports): keep the values you need rather than the
    message when you keep many.

    Attributes
    ----------
    buf : bytes
        The messages' bytes, back to back.
    tags, starts, ends : array of int
        Per field: tag number and value offsets, counted from the start of the field's
        message in ``buf`` (``array("q")``: the decoder copies them from its kernel's output
        in one ``memcpy``, where a list would make a Python int of each).
    first : list of int
        Message ``k``'s fields are ``[first[k], first[k + 1])`` of the arrays.
    cuts : list of int
        Message ``k``'s bytes are ``buf[cuts[k]:cuts[k + 1]]``.
    codes : bytes or None
        One byte per field: its tag when in ``0 .. 254``, else :data:`CODE_ESCAPE`. With them
        :meth:`FixMessage.get` finds a tag with a memchr (``bytes.find``) rather than a scan
        of the tag array (a Python int compared per field).
    checked : list of int or None
        Per message, what the decoder's layout table proved of it (None: 0 for all). The one
        thing that changes: the session may mark an unknown layout again once it keeps it
        (:meth:`~engine.fix.layouts.LayoutTable.recheck`).
    ts_recv : int
        Local receive time of the messages, ns since the epoch (0 when unknown).
    """

    __slots__ = ("buf", "checked", "codes", "cuts", "ends", "first", "starts", "tags", "ts_recv")

    buf: bytes
    tags: array[int]
    starts: array[int]
    ends: array[int]
    first: list[int]
    cuts: list[int]
    codes: bytes | None
    checked: list[int] | None
    ts_recv: int


def make_block(
    buf: bytes,
    tags: array[int],
    starts: array[int],
    ends: array[int],
    first: list[int],
    cuts: list[int],
    codes: bytes | None,
    checked: list[int] | None,
    ts_recv: int,
) -> Block:
    """Return a :class:`Block` of these parts (see there)."""
    b = Block()
    b.buf = buf
    b.tags = tags
    b.starts = starts
    b.ends = ends
    b.first = first
    b.cuts = cuts
    b.codes = codes
    b.checked = checked
    b.ts_recv = ts_recv
    return b


class FixMessage:
    """A decoded message: its bytes plus the offsets of every field, in wire order.

    Made by the decoder (:class:`engine.fix.codec.FixDecoder`), by :meth:`from_pairs` or by
    :meth:`from_arrays`; immutable.

    Notes
    -----
    Values are ``bytes``; ``get`` returns the first occurrence of a tag. Repeating groups are
    seen as repeated tags in wire order (``pairs``); typed access and group structure come
    from the data dictionary. A message is a position in a :class:`Block` that it shares
    with the messages that arrived with it: two slots set without an ``__init__`` call
    (:func:`make_messages`), one small object per message (decoding into messages went from
    3.0 to 1.2 µs each with shared lists; with blocks, decoding plus one ``get`` takes 0.9 µs
    of CPU per ExecutionReport on a 2-core VM).
    """

    _b: Block
    _k: int
    _index: dict[int, int]

    __slots__ = ("_b", "_index", "_k")

    @classmethod
    def from_arrays(
        cls,
        buf: bytes,
        tags: array[int],
        starts: array[int],
        ends: array[int],
        first: int,
        last: int,
        ts_recv: int = 0,
        checked: int = 0,
    ) -> FixMessage:
        """Return the message of ``buf`` whose fields are ``[first, last)`` of the arrays.

        Parameters
        ----------
        buf : bytes
            The message's bytes (exactly one message).
        tags, starts, ends : array of int
            Per field: tag number and value offsets into ``buf`` (``array("q")``).
        first, last : int
            This message's fields in the arrays: ``[first, last)``.
        ts_recv : int
            Local receive time, ns since the epoch (0 when unknown).
        checked : int
            What the decoder's layout table proved of it (:mod:`engine.fix.layouts`; 0:
            nothing).
        """
        # make_block, inlined (the transport makes one message per read this way).
        b = Block()
        b.buf = buf
        b.tags = tags
        b.starts = starts
        b.ends = ends
        b.first = [first, last]
        b.cuts = [0, len(buf)]
        b.codes = None
        b.checked = [checked]
        b.ts_recv = ts_recv
        m = cls()
        m._b = b
        m._k = 0
        return m

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[int, Value]]) -> FixMessage:
        """Build a message from fields in wire order (no BodyLength/CheckSum added or checked)."""
        out = bytearray()
        tags: array[int] = array("q")
        starts: array[int] = array("q")
        ends: array[int] = array("q")
        for tag, value in pairs:
            raw = to_bytes(value)
            out += b"%d=" % tag
            tags.append(tag)
            starts.append(len(out))
            out += raw
            ends.append(len(out))
            out += SOH
        return cls.from_arrays(bytes(out), tags, starts, ends, 0, len(tags))

    @property
    def raw(self) -> bytes:
        """Return the message bytes as received."""
        b = self._b
        k = self._k
        cuts = b.cuts
        return b.buf[cuts[k] : cuts[k + 1]]

    @property
    def ts_recv(self) -> int:
        """Return the local receive time, ns since the epoch (0 when unknown)."""
        return self._b.ts_recv

    @property
    def checked(self) -> int:
        """Return what the decoder's layout table proved of this message (0: nothing)."""
        checked = self._b.checked
        return 0 if checked is None else checked[self._k]

    def _span(self) -> tuple[int, int]:
        first = self._b.first
        k = self._k
        return first[k], first[k + 1]

    @property
    def tags(self) -> list[int]:
        """Return the tags in wire order."""
        a, z = self._span()
        return self._b.tags[a:z].tolist()

    @property
    def pairs(self) -> list[Field]:
        """Return ``(tag, value)`` for every field in wire order."""
        b = self._b
        a, z = self._span()
        raw = self.raw
        return [
            (t, raw[s:e]) for t, s, e in zip(b.tags[a:z], b.starts[a:z], b.ends[a:z], strict=True)
        ]

    def __len__(self) -> int:
        a, z = self._span()
        return z - a

    def __iter__(self) -> Iterator[Field]:
        return iter(self.pairs)

    def __repr__(self) -> str:
        return f"FixMessage({self.raw.replace(SOH, b'|').decode('latin-1')!r})"

    def _idx(self) -> dict[int, int]:
        try:
            return self._index
        except AttributeError:  # not built yet (the slot is left unset until then)
            pass
        # Built from the end so that the first occurrence of a tag wins; values are
        # positions in the (shared) arrays.
        a, z = self._span()
        index = dict(zip(reversed(self._b.tags[a:z]), range(z - 1, a - 1, -1), strict=True))
        self._index = index
        return index

    def __contains__(self, tag: object) -> bool:
        a, z = self._span()
        if z - a <= _SCAN_FIELDS:
            return tag in self._b.tags[a:z]
        return tag in self._idx()

    def get(self, tag: int, default: bytes | None = None) -> bytes | None:
        """Return the value of the first ``tag`` field, or ``default``."""
        b = self._b
        k = self._k
        codes = b.codes
        first = b.first
        if codes is not None and 0 <= tag < CODE_ESCAPE:
            # A tag below 255 is one byte in ``codes``: a memchr finds its first occurrence.
            i = codes.find(tag, first[k], first[k + 1])
            if i < 0:
                return default
            at = b.cuts[k]
            return b.buf[at + b.starts[i] : at + b.ends[i]]
        a = first[k]
        z = first[k + 1]
        if z - a <= _SCAN_FIELDS:
            # A short message: scan its tags (first occurrence, as an index gives). Cheaper
            # than building an index for an application that reads a field or two, and no
            # state to keep per message.
            try:
                i = b.tags.index(tag, a, z)
            except ValueError:
                return default
        else:
            j = self._idx().get(tag)
            if j is None:
                return default
            i = j
        at = b.cuts[k]
        return b.buf[at + b.starts[i] : at + b.ends[i]]

    def get_many(self, tags: Sequence[int]) -> tuple[bytes | None, ...]:
        """Return the values of several tags at once: ``get(tag)`` of each, None when absent.

        Parameters
        ----------
        tags : tuple of int
            The tags, in the order wanted (a tuple: the lookup plan is cached per tuple; a
            constant of the caller's module is best).

        Returns
        -------
        tuple of (bytes or None)
            One item per tag: the value of its first occurrence, exactly as :meth:`get`
            returns it (repeating groups are repeated tags; tags from 255 on and negative ones
            included).

        Raises
        ------
        TypeError
            If ``tags`` is not a tuple of integers.

        Notes
        -----
        The first message of a layout (its sequence of tags) finds where each tag is and
        compiles a plan for it: a function slicing the values straight from their offsets.
        Later messages of that layout look the plan up by their tag codes (one byte per field,
        see :class:`Block`) or their tag array's bytes, and run it: 40 % of the CPU of
        separate ``get`` calls for eight tags, under 30 % for eighteen. Long messages (more
        than 64 fields) and layouts beyond the cache's caps are answered by ``get`` per tag.
        """
        b = self._b
        k = self._k
        first = b.first
        a = first[k]
        z = first[k + 1]
        # (Typed a Sequence, so that a list reaches the check below, compiled too.)
        plans = _PLANS.get(tags) if type(tags) is tuple else None
        if plans is None:
            plans = _plans_of(tags)
        if z - a <= _PLAN_FIELDS:
            codes = b.codes
            if codes is not None and plans.small:
                key = codes[a:z]
                layouts = plans.by_codes
            else:
                key = b.tags[a:z].tobytes()
                layouts = plans.by_tags
            plan = layouts.get(key)
            if plan is None:
                plan = _new_plan(plans, layouts, key, layouts is plans.by_codes)
            if plan is not None:
                cuts = b.cuts
                return plan(b.buf[cuts[k] : cuts[k + 1]], b.starts[a:z], b.ends[a:z])
        get = self.get
        return tuple([get(t) for t in plans.tags])

    def get_int(self, tag: int) -> int | None:
        """Return the value of ``tag`` as an int, or None when absent or not an integer."""
        v = self.get(tag)
        if v is None or not v.isdigit():
            if v is not None and v[:1] == b"-" and v[1:].isdigit():
                return int(v)
            return None
        return int(v)

    def get_all(self, tag: int) -> list[bytes]:
        """Return every value of ``tag`` in wire order."""
        b = self._b
        a, z = self._span()
        raw = self.raw
        return [
            raw[s:e]
            for t, s, e in zip(b.tags[a:z], b.starts[a:z], b.ends[a:z], strict=True)
            if t == tag
        ]

    def values_pass(self, checks: Iterable[tuple[int, Callable[[bytes], bool]]]) -> bool:
        """Return whether no field is empty and ``check(value)`` holds for every check given.

        ``checks`` holds ``(position, check)`` pairs, positions in wire order; values are
        sliced only for them.
        """
        b = self._b
        a, z = self._span()
        starts, ends = b.starts, b.ends
        if not all(map(operator.lt, starts[a:z], ends[a:z])):
            return False
        buf = b.buf
        at = b.cuts[self._k]
        for i, check in checks:  # noqa: SIM110  (a loop: no generator object per message)
            if not check(buf[at + starts[a + i] : at + ends[a + i]]):
                return False
        return True

    def session_header(self) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes] | None:
        """Return the session header values when the message starts in the standard layout.

        The standard layout is ``8, 9, 35, 34, 49, 52, 56`` in that order (what QuickFIX and
        this engine write when there are no further header fields before TargetCompID <56>).
        Returns ``(BeginString, MsgType, MsgSeqNum, SenderCompID, SendingTime, TargetCompID)``
        as raw bytes, or None for any other layout (then use :meth:`get`). Each value is the
        first occurrence of its tag, as :meth:`get` would return it.
        """
        b = self._b
        a, z = self._span()
        h = a + 7
        if h > z or b.tags[a:h] != _STD_HEADER:
            return None
        raw = self.raw
        s0, _, s2, s3, s4, s5, s6 = b.starts[a:h]
        e0, _, e2, e3, e4, e5, e6 = b.ends[a:h]
        return raw[s0:e0], raw[s2:e2], raw[s3:e3], raw[s4:e4], raw[s5:e5], raw[s6:e6]

    @property
    def msg_type(self) -> bytes:
        """Return MsgType <35> (empty when missing)."""
        return self.get(35) or b""

    @property
    def begin_string(self) -> bytes:
        """Return BeginString <8>."""
        return self.get(8) or b""

    @property
    def seq_num(self) -> int | None:
        """Return MsgSeqNum <34>, or None when missing or not a number."""
        return self.get_int(34)

    @property
    def is_admin(self) -> bool:
        """Return True for session-level message types."""
        return self.msg_type in ADMIN_MSG_TYPES

    def header_pairs(self) -> list[Field]:
        """Return the standard header fields other than 8, 9 and 35, in wire order."""
        return [(t, v) for t, v in self.pairs if t in HEADER_TAGS and t not in (8, 9, 35)]

    def body_pairs(self) -> list[Field]:
        """Return the body fields in wire order (neither header nor trailer)."""
        return [(t, v) for t, v in self.pairs if t not in HEADER_TAGS and t not in TRAILER_TAGS]


#: A compiled :meth:`FixMessage.get_many` plan: ``plan(raw, starts, ends)`` of one message.
_Plan: TypeAlias = Callable[[bytes, "array[int]", "array[int]"], tuple[bytes | None, ...]]


class _Plans:
    """The :meth:`FixMessage.get_many` plans of one tuple of tags, by layout."""

    __slots__ = ("by_codes", "by_tags", "kept", "small", "tags")

    def __init__(self, tags: tuple[int, ...], kept: bool) -> None:
        #: The tags as plain ints.
        self.tags = tags
        #: Whether this entry is in the cache (else it gets no plans: one per call would
        #: cost a compilation per call).
        self.kept = kept
        #: Whether every tag is one byte of a block's codes (0 .. 254): then a message with
        #: codes is keyed by them, else by its tag array's bytes.
        self.small = all(0 <= t < CODE_ESCAPE for t in tags)
        self.by_codes: dict[bytes, _Plan] = {}
        self.by_tags: dict[bytes, _Plan] = {}


#: Plans by tuple of tags (:meth:`FixMessage.get_many`), and how many plans there are.
_PLANS: dict[tuple[int, ...], _Plans] = {}
_plan_count = 0


def _plans_of(tags: Sequence[int]) -> _Plans:
    """Return the (new) plans entry of ``tags``, after checking they are integers."""
    if type(tags) is not tuple:
        raise TypeError(f"get_many takes a tuple of tags, not {type(tags).__name__}")
    for t in tags:
        if not hasattr(t, "__index__"):
            raise TypeError(f"get_many: tag {t!r} is not an integer")
    ints = tuple(operator.index(t) for t in tags)
    kept = len(_PLANS) < _PLAN_TOTAL
    plans = _Plans(ints, kept)
    if kept:
        _PLANS[ints] = plans
    return plans


def _new_plan(plans: _Plans, layouts: dict[bytes, _Plan], key: bytes, coded: bool) -> _Plan | None:
    """Compile and keep the plan of the layout ``key`` (None when the caps are reached).

    ``key`` is the message's tag codes when ``coded``, else its tag array's bytes.
    """
    global _plan_count
    if len(layouts) >= _PLAN_LAYOUTS or _plan_count >= _PLAN_TOTAL or not plans.kept:
        return None
    if coded:
        positions = [key.find(t) for t in plans.tags]
    else:
        wire = array("q")
        wire.frombytes(key)
        order = wire.tolist()
        positions = [order.index(t) if t in order else -1 for t in plans.tags]
    plan = _compile_plan(positions)
    layouts[key] = plan
    _plan_count += 1
    return plan


def _compile_plan(positions: Sequence[int]) -> _Plan:
    """Return the plan for fields at ``positions`` of a layout (-1: the tag is absent).

    The plan is a function of ``(raw, starts, ends)`` of a message giving the value at each
    position in turn (None for -1): one tuple display, no loop, positions as constants. The
    generated source holds only those integers, so nothing a message says gets into it.
    """
    items = "".join(
        "None, " if p < 0 else f"raw[s[{p:d}] : e[{p:d}]], " for p in map(int, positions)
    )
    source = f"def plan(raw, s, e):\n    return ({items})\n"
    namespace: dict[str, object] = {}
    exec(compile(source, "<FixMessage.get_many plan>", "exec"), namespace)
    plan: _Plan = namespace["plan"]  # type: ignore[assignment]
    return plan


def make_messages(out: list[FixMessage], block: Block, count: int) -> None:
    """Append to ``out`` the first ``count`` messages of ``block`` (the decoder's call).

    The messages are made without an ``__init__`` call, their two slots set here: the call
    and a copy of every message's bytes were half the cost of decoding into messages.
    """
    cls = FixMessage
    append = out.append
    for k in range(count):
        m = cls()
        m._b = block
        m._k = k
        append(m)


class Group:
    """One repeating group inside an :class:`OutMessage`.

    Parameters
    ----------
    tag : int
        The NumInGroup tag (for example NoPartyIDs <453>).
    entries : list of list
        One list of fields (or nested groups) per repetition, in dictionary order.
    """

    __slots__ = ("entries", "tag")

    def __init__(self, tag: int, entries: Sequence[Sequence[Field | Group]] = ()) -> None:
        self.tag = tag
        self.entries: list[list[Field | Group]] = [list(e) for e in entries]

    def __getitem__(self, index: int) -> int:
        # Lets a Group sort among (tag, value) tuples by its NumInGroup tag.
        if index == 0:
            return self.tag
        raise IndexError(index)

    def __repr__(self) -> str:
        return f"Group({self.tag}, {self.entries!r})"


BodyEntry: TypeAlias = Field | Group


class OutMessage:
    """An outbound message being built.

    Parameters
    ----------
    msg_type : bytes or str
        MsgType <35>.
    body : iterable of (tag, value) or Group, optional
        Body fields; encoded in ascending tag order, each group at its NumInGroup tag.
    header : mapping of int to value, optional
        Header fields besides the ones the session fills in (8, 9, 35, 34, 49, 52, 56); for
        example PossResend <97>, OnBehalfOfCompID <115>, ApplVerID <1128>.
    """

    __slots__ = ("body", "header", "msg_type")

    def __init__(
        self,
        msg_type: bytes | str,
        body: Iterable[tuple[int, Value] | Group] = (),
        header: dict[int, Value] | None = None,
    ) -> None:
        self.msg_type = msg_type if type(msg_type) is bytes else to_bytes(msg_type)
        entries = list(body)
        try:
            plain = all(type(e[1]) is bytes for e in entries)
        except IndexError:  # a Group
            plain = False
        self.body: list[BodyEntry] = (
            entries  # type: ignore[assignment]
            if plain
            else [e if isinstance(e, Group) else (e[0], to_bytes(e[1])) for e in entries]
        )
        self.header: dict[int, bytes] = {t: to_bytes(v) for t, v in (header or {}).items()}

    def set(self, tag: int, value: Value) -> OutMessage:
        """Set body field ``tag`` (replacing an existing one) and return self."""
        raw = to_bytes(value)
        for i, e in enumerate(self.body):
            if not isinstance(e, Group) and e[0] == tag:
                self.body[i] = (tag, raw)
                return self
        self.body.append((tag, raw))
        return self

    def get(self, tag: int) -> bytes | None:
        """Return body or header field ``tag`` (first occurrence), or None."""
        if tag in self.header:
            return self.header[tag]
        for e in self.body:
            if not isinstance(e, Group) and e[0] == tag:
                return e[1]
        return None

    def remove(self, tag: int) -> None:
        """Remove every body field ``tag``."""
        self.body = [e for e in self.body if isinstance(e, Group) or e[0] != tag]

    def add_group(self, tag: int, entries: Sequence[Sequence[tuple[int, Value] | Group]]) -> None:
        """Append repeating group ``tag`` with ``entries`` (fields in dictionary order)."""
        conv = [
            [x if isinstance(x, Group) else (x[0], to_bytes(x[1])) for x in entry]
            for entry in entries
        ]
        self.body.append(Group(tag, conv))

    @classmethod
    def from_message(
        cls, message: FixMessage, groups: dict[int, tuple[int, ...]] | None = None
    ) -> OutMessage:
        """Copy a decoded message's MsgType, non-session header fields and body.

        Parameters
        ----------
        message : FixMessage
            The decoded message.
        groups : dict, optional
            NumInGroup tag -> member tags (first one the delimiter) for the repeating groups of
            this message type, nested groups listed under their own NumInGroup tag. Without it
            the body is copied flat (fine for messages without groups).
        """
        header: dict[int, Value] = {}
        body: list[Field] = []
        for t, v in message.pairs:
            if t in HEADER_TAGS:
                if t not in _SESSION_FILLED:
                    header[t] = v
            elif t not in TRAILER_TAGS:
                body.append((t, v))
        out = cls(message.msg_type, header=header)
        if groups:
            out.body = _nest(body, groups)
        else:
            out.body = list(body)
        return out


#: Header fields the session always sets itself when sending.
_SESSION_FILLED: frozenset[int] = frozenset({8, 9, 35, 34, 49, 52, 56})


def _nest(fields: list[Field], groups: dict[int, tuple[int, ...]]) -> list[BodyEntry]:
    out: list[BodyEntry] = []
    i = 0
    while i < len(fields):
        entry, i = _take(fields, i, groups, None)
        out.append(entry)
    return out


def _take(
    fields: list[Field], i: int, groups: dict[int, tuple[int, ...]], allowed: frozenset[int] | None
) -> tuple[BodyEntry, int]:
    tag, value = fields[i]
    members = groups.get(tag)
    if members is None or not value.isdigit():
        return (tag, value), i + 1
    count = int(value)
    member_set = frozenset(members)
    delim = members[0]
    i += 1
    entries: list[list[BodyEntry]] = []
    while len(entries) < count and i < len(fields) and fields[i][0] == delim:
        entry: list[BodyEntry] = []
        seen: set[int] = set()
        while i < len(fields) and fields[i][0] in member_set:
            t = fields[i][0]
            if entry and (t == delim or t in seen):
                break
            seen.add(t)
            sub, i = _take(fields, i, groups, member_set)
            entry.append(sub)
        entries.append(entry)
    return Group(tag, entries), i
