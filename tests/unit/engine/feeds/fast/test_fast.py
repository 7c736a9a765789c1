# SPDX-License-Identifier: MIT
"""FAST decoding: CQG's real messages (rs-fastlib's cqg.rs) and operator cases encoded here.

Every test that decodes runs both decoders (the Python reference and the column kernel) and
checks both against the expected values, so they also agree with each other.
"""

import re
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.feeds.fast import _kernels
from engine.feeds.fast.columnar import ColumnDecoder
from engine.feeds.fast.decoder import Decoder, FastDecodeError, Message
from engine.feeds.fast.templates import Decimal, TemplateError, TemplateSet
from tests.conftest import SHARED

CQG = SHARED / "data/fast_cqg"
#: The column kernel uncompiled (numba's dispatcher is untyped: reached through Any).
KERNEL_PY: Any = cast(Any, _kernels.decode_columns).py_func

# --- cqg.rs: its byte vectors and the texts they decode to ----------------------------------


def cqg_cases(path: Path) -> list[tuple[str, bool, list[bytes], list[str]]]:
    """Return (test name, json?, messages, expected texts) per #[test] of the Rust file."""
    text = path.read_text()
    cases = []
    for part in text.split("#[test]")[1:]:
        name = re.search(r"fn (\w+)", part)
        call = re.search(r"do_tests_seq(_json)?\(", part)
        assert name is not None
        assert call is not None
        body = part[call.end() : part.index("\n}\n")]
        raws = [
            bytes(int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]{2})", v))
            for v in re.findall(r"vec!\[(\s*0x[^\]]*)\]", body)
        ]
        if call.group(1):
            expected = re.findall(r'r#"(.*?)"#', body)
        else:
            expected = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
        cases.append((name.group(1), bool(call.group(1)), raws, expected))
    return cases


def _cqg() -> tuple[TemplateSet, list[tuple[str, bool, list[bytes], list[str]]]]:
    if not (CQG / "cqg.rs").is_file() or not (CQG / "templates.xml").is_file():
        pytest.skip(f"{CQG} is not there")
    return TemplateSet.from_file(CQG / "templates.xml"), cqg_cases(CQG / "cqg.rs")


def test_cqg_rs_holds_every_case() -> None:
    _, cases = _cqg()
    assert [c[0] for c in cases] == [
        "test_heartbeats",
        "test_logon",
        "test_loout",
        "test_definitions",
        "test_messages_json",
    ]
    for _, _, raws, expected in cases:
        assert len(raws) == len(expected) > 0


@pytest.mark.parametrize("kernel", [False, True], ids=["python", "kernel"])
def test_cqg_messages_decode_to_their_expected_text(kernel: bool) -> None:
    ts, cases = _cqg()
    checked = 0
    for name, as_json, raws, expected in cases:
        py, cols = Decoder(ts), ColumnDecoder(ts)  # a decoder per Rust test, as there
        for i, (raw, want) in enumerate(zip(raws, expected, strict=True)):
            if kernel:
                c = cols.decode(raw)
                assert c.n_messages == 1
                msgs = c.messages()
            else:
                msgs = py.decode(raw)
                assert msgs[0].size == len(raw)
            assert len(msgs) == 1
            got = msgs[0].to_json() if as_json else msgs[0].to_text()
            assert got == want, f"{name} #{i + 1}"
            checked += 1
    assert checked == 11


def test_cqg_messages_back_to_back_decode_in_one_call_into_columns() -> None:
    ts, cases = _cqg()
    raws = [r for name, _, rs, _ in cases if name != "test_messages_json" for r in rs]
    py = Decoder(ts)
    stream = b"".join(raws)
    texts = [m.to_text() for m in py.decode(stream)]
    expected = [t for name, _, _, ts_ in cases if name != "test_messages_json" for t in ts_]
    assert texts == expected
    cols = ColumnDecoder(ts).decode(stream)
    assert [m.to_text() for m in cols.messages()] == expected
    hb = cols.tables["MDHeartbeat"]
    assert hb["MsgSeqNum"].tolist() == [1, 2, 3]
    assert hb["SendingTime"].tolist() == [20240606000000000, 20240606000010000, 20240606000020000]
    defs = cols.tables["MDSecurityDefinition"]
    assert defs["SecurityID"].tolist() == [60714110, 60714049, 60714048]
    sessions = cols.tables["MDSecurityDefinition.TradingSessions"]
    assert len(sessions) == 18
    assert sessions["parent"].tolist() == [0] * 6 + [1] * 6 + [2] * 6
    assert defs["TradingSessions_first"].tolist() == [0, 6, 12]
    assert cols.string("MDSecurityDefinition", "Symbol", 1) == "MBTS1C100"
    assert cols.strings("MDSecurityDefinition", "SecurityDesc") == [
        "MBTS13X24",
        "MBTS1V24",
        "MBTS1X24",
    ]
    assert cols.strings("MDSecurityDefinition", "StrikeCurrency") == [None] * 3
    assert cols.strings("MDHeartbeat", "SenderCompID") == ["CQG"] * 3
    addresses = cols.strings("MDSecurityDefinition.Connections", "ConnectionIPAddress")
    assert addresses[:4] == ["239.246.5.4", "239.246.6.4", "10.1.0.120", "10.1.0.120"]
    assert cols.present("MDSecurityDefinition", "StrikeCurrency").tolist() == [False] * 3
    assert cols.present("MDSecurityDefinition", "Currency").tolist() == [True] * 3


def test_kernel_uncompiled_decodes_the_same() -> None:
    ts, cases = _cqg()
    raws = [r for name, _, rs, _ in cases if name != "test_messages_json" for r in rs]
    expected = [t for name, _, _, ts_ in cases if name != "test_messages_json" for t in ts_]
    dec = ColumnDecoder(ts)
    dec._kernel = KERNEL_PY
    cols = dec.decode(b"".join(raws))
    assert [m.to_text() for m in cols.messages()] == expected
    assert cols.layouts["MDHeartbeat"].constants == {
        "MessageType": "0",
        "ApplVerID": "8",
        "SenderCompID": "CQG",
    }
    names = cols.tables["MDHeartbeat"].dtype.names
    assert names is not None
    assert "MessageType_off" not in names
    ops = TemplateSet.from_xml(OPS_XML)
    data = pm(1, 0, 1, 1, 1, 1, 1) + u(1) + nu(None) + nu(7) + i(-1) + i(-1) + s("AB")
    data += i(-2) + i(12345) + s("XY") + ni(None)
    py = Decoder(ops).decode(data)
    dec = ColumnDecoder(ops)
    dec._kernel = KERNEL_PY
    assert [m.to_text() for m in dec.decode(data).messages()] == [m.to_text() for m in py]
    assert py[0].fields["SDelta"] == "AB"
    assert py[0].fields["Tail"] == "ABCDXY"


def test_a_fresh_decoder_cannot_copy_a_template_id_it_never_saw() -> None:
    ts, cases = _cqg()
    second_heartbeat = cases[0][2][1]  # pmap 0x80: the template id is copied
    with pytest.raises(FastDecodeError, match=r"offset 1: field template id: .*ERR D5"):
        Decoder(ts).decode(second_heartbeat)
    with pytest.raises(FastDecodeError, match=r"offset 1: field template id: .*ERR D5"):
        ColumnDecoder(ts).decode(second_heartbeat)


# --- bytes encoded by hand, from the FAST 1.1 spec ------------------------------------------


def pm(*bits: int) -> bytes:
    """Return a presence map of ``bits`` (7 a byte, stop bit on the last)."""
    groups = [bits[i : i + 7] for i in range(0, max(len(bits), 1), 7)]
    out = bytearray()
    for g in groups:
        b = 0
        for j, bit in enumerate(g):
            b |= bit << (6 - j)
        out.append(b)
    out[-1] |= 0x80
    return bytes(out)


def u(v: int) -> bytes:
    """Return ``v`` as a stop-bit unsigned integer."""
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.append(v & 0x7F)
        v >>= 7
    out.reverse()
    out[-1] |= 0x80
    return bytes(out)


def i(v: int) -> bytes:
    """Return ``v`` as a stop-bit signed integer (fewest bytes whose sign bit is right)."""
    n = 1
    while not -(1 << (7 * n - 1)) <= v < 1 << (7 * n - 1):
        n += 1
    x = v & ((1 << (7 * n)) - 1)
    out = [(x >> (7 * k)) & 0x7F for k in reversed(range(n))]
    out[-1] |= 0x80
    return bytes(out)


def nu(v: int | None) -> bytes:
    """Return a nullable unsigned integer."""
    return b"\x80" if v is None else u(v + 1)


def ni(v: int | None) -> bytes:
    """Return a nullable signed integer."""
    if v is None:
        return b"\x80"
    return i(v + 1) if v >= 0 else i(v)


def s(text: str) -> bytes:
    """Return a non-nullable ASCII string."""
    if not text:
        return b"\x80"
    raw = bytearray(text.encode("ascii"))
    raw[-1] |= 0x80
    return bytes(raw)


OPS_XML = """<?xml version="1.0"?>
<templates xmlns="http://www.fixprotocol.org/ns/fast/td/1.1">
  <template name="Ops" id="1">
    <uInt32 name="CopyMand" id="10"><copy value="5"/></uInt32>
    <uInt32 name="CopyOpt" id="11" presence="optional"><copy/></uInt32>
    <uInt32 name="Inc" id="12" presence="optional"><increment/></uInt32>
    <int64 name="Delta" id="13"><delta value="100"/></int64>
    <string name="SDelta" id="14"><delta/></string>
    <decimal name="Px" id="15"><delta/></decimal>
    <string name="Tail" id="16"><tail value="ABCDEF"/></string>
    <int32 name="Def" id="17" presence="optional"><default value="-3"/></int32>
    <string name="Const" id="18" presence="optional"><constant value="K"/></string>
  </template>
  <template name="NoInit" id="2">
    <uInt32 name="C" id="1"><copy/></uInt32>
  </template>
</templates>
"""


def _both(ts: TemplateSet, data: bytes) -> list[Message]:
    """Decode with both decoders (fresh), check they agree, return the Python messages."""
    py = Decoder(ts).decode(data)
    cols = ColumnDecoder(ts).decode(data)
    assert [m.to_text() for m in cols.messages()] == [m.to_text() for m in py]
    assert cols.n_messages == len(py)
    return py


def test_operators_follow_the_spec_over_a_run_of_messages() -> None:
    ts = TemplateSet.from_xml(OPS_XML)
    msgs = [
        # tid, CopyMand absent (initial 5), CopyOpt NULL, Inc 7, Delta -1 on initial 100,
        # SDelta "AB" on "", Px -2/12345 on 0/0, Tail absent (initial), Def absent, Const on
        pm(1, 0, 1, 1, 0, 0, 1) + u(1) + nu(None) + nu(7) + i(-1) + i(0) + s("AB")
        + i(-2) + i(12345),
        # CopyMand copied, CopyOpt empty so absent, Inc 8, Delta +5, SDelta prepend "X"
        # (subtraction -1: remove 0 from the front), Px mantissa -45, Tail "ZZ", Def 4
        pm(0, 0, 0, 0, 1, 1, 0) + i(5) + i(-1) + s("X") + i(0) + i(-45) + s("ZZ") + ni(4),
        # CopyMand 9, CopyOpt 3, Inc NULL, Delta 0, SDelta drop 2 from the end + "Q", Px
        # exponent +1
        pm(0, 1, 1, 1, 0, 0, 0) + u(9) + nu(3) + nu(None) + i(0) + i(2) + s("Q") + i(1) + i(0),
        # nothing in the pmap: copies, increment after NULL stays absent, tail copies
        pm(0, 0, 0, 0, 0, 0, 0) + i(0) + i(0) + s("") + i(0) + i(0),
        # Inc 20 then incremented
        pm(0, 0, 0, 1, 0, 0, 0) + nu(20) + i(0) + i(0) + s("") + i(0) + i(0),
        pm(0, 0, 0, 0, 0, 0, 0) + i(0) + i(0) + s("") + i(0) + i(0),
    ]  # fmt: skip
    out = _both(ts, b"".join(msgs))
    f = [m.fields for m in out]
    assert f[0] == {
        "CopyMand": 5,
        "Inc": 7,
        "Delta": 99,
        "SDelta": "AB",
        "Px": Decimal(-2, 12345),
        "Tail": "ABCDEF",
        "Def": -3,
        "Const": "K",
    }
    assert str(f[0]["Px"]) == "123.45"
    assert f[1] == {
        "CopyMand": 5,
        "Inc": 8,
        "Delta": 104,
        "SDelta": "XAB",
        "Px": Decimal(-2, 12300),
        "Tail": "ABCDZZ",
        "Def": 4,
    }
    assert f[2] == {
        "CopyMand": 9,
        "CopyOpt": 3,
        "Delta": 104,
        "SDelta": "XQ",
        "Px": Decimal(-1, 12300),
        "Tail": "ABCDZZ",
        "Def": -3,
    }
    assert str(f[2]["Px"]) == "1230"
    assert "Inc" not in f[3]  # increment after NULL: the entry is empty
    assert f[3]["CopyOpt"] == 3
    assert f[3]["SDelta"] == "XQ"
    assert (f[4]["Inc"], f[5]["Inc"]) == (20, 21)


def test_tail_longer_than_its_base_replaces_it_and_copy_without_initial_fails() -> None:
    ts = TemplateSet.from_xml(OPS_XML)
    tail = pm(1, 0, 0, 0, 1, 0, 0) + u(1) + i(0) + i(0) + s("") + i(0) + i(0) + s("0123456789")
    assert _both(ts, tail)[0].fields["Tail"] == "0123456789"
    bad = pm(1, 0) + u(2)
    for dec in (Decoder(ts), ColumnDecoder(ts)):
        with pytest.raises(FastDecodeError, match=r"offset 2: field C: .*D5") as e:
            dec.decode(bad)
        assert e.value.offset == 2
        assert e.value.field == "C"


def test_string_delta_removing_more_than_the_base_is_an_error() -> None:
    ts = TemplateSet.from_xml(OPS_XML)
    data = pm(1, 0, 0, 0, 0, 0, 0) + u(1) + i(0) + i(3) + s("A")
    for dec in (Decoder(ts), ColumnDecoder(ts)):
        with pytest.raises(FastDecodeError, match=r"field SDelta: .*D7") as e:
            dec.decode(data)
        assert e.value.offset == 3  # where the subtraction length starts


def test_decimal_with_its_own_exponent_and_mantissa_operators() -> None:
    xml = """<templates><template name="D" id="1">
      <decimal name="P" id="1" presence="optional">
        <exponent><copy/></exponent><mantissa><delta/></mantissa>
      </decimal>
      <uInt32 name="After" id="2"/>
    </template></templates>"""
    ts = TemplateSet.from_xml(xml)
    data = (
        pm(1, 1)
        + u(1)
        + ni(-2)
        + i(150)
        + u(5)  # 1.50
        + pm(0, 1)
        + ni(None)
        + u(6)  # NULL exponent: no mantissa in the stream
        + pm(0, 0)
        + u(7)  # exponent copied: the entry is empty, so absent again
        + pm(0, 1)
        + ni(-1)
        + i(5)
        + u(8)  # the mantissa's delta still starts from 150
    )
    out = _both(ts, data)
    assert [m.fields for m in out] == [
        {"P": Decimal(-2, 150), "After": 5},
        {"After": 6},
        {"After": 7},
        {"P": Decimal(-1, 155), "After": 8},
    ]
    assert [m.to_text() for m in out][3] == "D=<P=15.5|After=8>"


NEST_XML = """<templates>
  <template name="Nest" id="3">
    <sequence name="Items" presence="optional">
      <length name="N" id="100"/>
      <uInt32 name="Q" id="101"><copy/></uInt32>
      <string name="Name" id="102"/>
    </sequence>
    <group name="G" presence="optional">
      <int32 name="GI" id="103"><default value="1"/></int32>
      <byteVector name="Raw" id="104"/>
    </group>
    <templateRef/>
  </template>
  <template name="Leaf" id="4">
    <string name="U" id="105" charset="unicode" presence="optional"/>
    <string name="A" id="106" presence="optional"/>
  </template>
</templates>"""


def test_sequences_groups_and_dynamic_references_nest() -> None:
    ts = TemplateSet.from_xml(NEST_XML)
    word = "né".encode()
    data = (
        pm(1, 1)
        + u(3)
        + nu(2)
        + pm(1)
        + u(7)
        + s("a")  # element 1: Q in the stream
        + pm(0)
        + s("bc")  # element 2: Q copied
        + pm(0)
        + u(2)
        + b"\x01\x02"  # group: GI default, Raw 2 bytes
        + pm(1)
        + u(4)
        + nu(len(word))
        + word
        + b"\x00\x80"  # Leaf: U, A = "" (nullable)
        + pm(0)
        + b"\x80"
        + b"\x80"  # template id copied (Leaf, set by the reference)
    )
    out = _both(ts, data)
    assert out[0].to_text() == (
        "Nest=<Items=<Q=7|Name=a><Q=7|Name=bc>|G=<GI=1|Raw=0102>|"
        "TemplateReference=<Leaf=<U=né|A=>>>"
    )
    assert out[1].to_text() == "Leaf=<>"  # both NULL
    cols = ColumnDecoder(ts).decode(data)
    nest = cols.tables["Nest"]
    assert (nest["TemplateReference_tid"][0], nest["TemplateReference_row"][0]) == (4, 0)
    assert cols.tables["Leaf"]["parent"].tolist() == [0, -1]
    assert cols.tables["Nest.Items"]["Q"].tolist() == [7, 7]


def test_scopes_keep_entries_apart_and_explicit_keys_share_them() -> None:
    xml = """<templates>
      <template name="A" id="10" dictionary="template">
        <uInt32 name="X" id="1"><copy/></uInt32>
        <uInt32 name="G" id="2"><copy dictionary="global"/></uInt32>
        <uInt32 name="K1" id="3"><copy key="shared" dictionary="global"/></uInt32>
      </template>
      <template name="B" id="11" dictionary="template">
        <uInt32 name="X" id="1"><copy/></uInt32>
        <uInt32 name="G" id="2"><copy dictionary="global"/></uInt32>
        <uInt32 name="K2" id="3"><copy key="shared" dictionary="global"/></uInt32>
      </template>
    </templates>"""
    ts = TemplateSet.from_xml(xml)
    assert len(ts.slots) == 1 + 2 + 1 + 1  # template id, X per template, G, "shared"
    data = (
        pm(1, 1, 1, 1)
        + u(10)
        + u(1)
        + u(2)
        + u(3)
        + pm(1, 1, 0, 0)
        + u(11)
        + u(10)  # B: own X; G and K2 from A's entries
        + pm(1, 0, 0, 0)
        + u(10)  # A again: X is A's, not B's
    )
    out = _both(ts, data)
    assert out[1].fields == {"X": 10, "G": 2, "K2": 3}
    assert out[2].fields == {"X": 1, "G": 2, "K1": 3}


def test_type_scope_is_shared_by_templates_of_one_application_type() -> None:
    xml = """<templates dictionary="type">
      <template name="Q1" id="1"><typeRef name="Quote"/>
        <uInt32 name="Px" id="1"><copy/></uInt32></template>
      <template name="Q2" id="2"><typeRef name="Quote"/>
        <uInt32 name="Px" id="1"><copy/></uInt32></template>
      <template name="T" id="3"><typeRef name="Trade"/>
        <uInt32 name="Px" id="1"><copy value="0"/></uInt32></template>
    </templates>"""
    ts = TemplateSet.from_xml(xml)
    assert len(ts.slots) == 1 + 2  # template id; Px of Quote, Px of Trade
    data = pm(1, 1) + u(1) + u(42) + pm(1, 0) + u(2) + pm(1, 0) + u(3)
    out = _both(ts, data)
    assert [m.fields["Px"] for m in out] == [42, 42, 0]  # Q2 sees Q1's entry, T its own


def test_resets_clear_the_dictionaries() -> None:
    xml = """<templates>
      <template name="C" id="1"><uInt32 name="V" id="1"><copy value="0"/></uInt32></template>
      <template name="R" id="2" reset="yes"/>
    </templates>"""
    ts = TemplateSet.from_xml(xml)
    data = pm(1, 1) + u(1) + u(9) + pm(1) + u(2) + pm(1, 0) + u(1)  # V=9, reset, V copied
    out = _both(ts, data)
    assert [m.fields for m in out] == [{"V": 9}, {}, {"V": 0}]
    scp = pm(1, 1) + u(1) + u(9) + pm(1) + u(120) + pm(1, 0) + u(1)  # FAST SCP Reset (120)
    assert [m.fields.get("V") for m in Decoder(ts).decode(scp)] == [9, None, 0]
    assert [m.fields["V"] for m in ColumnDecoder(ts).decode(scp).messages()] == [9, 0]
    for per_packet in (False, True):
        py = Decoder(ts, reset_per_packet=per_packet)
        cols = ColumnDecoder(ts, reset_per_packet=per_packet)
        py.decode(pm(1, 1) + u(1) + u(9))
        cols.decode(pm(1, 1) + u(1) + u(9))
        want = 0 if per_packet else 9
        assert py.decode(pm(1, 0) + u(1))[0].fields["V"] == want
        assert cols.decode(pm(1, 0) + u(1)).tables["C"]["V"].tolist() == [want]


def test_packets_reset_their_dictionaries_when_configured() -> None:
    ts, cases = _cqg()
    hb = cases[0][2]  # the second and third heartbeats copy the template id
    texts = cases[0][3]
    for dec in (Decoder(ts), ColumnDecoder(ts)):
        got = dec.decode_packets([hb[0], hb[1] + hb[2]])
        msgs = got if isinstance(got, list) else got.messages()
        assert [m.to_text() for m in msgs] == texts
    cols = ColumnDecoder(ts).decode_packets([hb[0], hb[1] + hb[2]])
    assert cols.packets.tolist() == [0, len(hb[0])]
    rows = cols.tables["MDHeartbeat"]
    assert np.searchsorted(cols.packets, rows["offset"], "right").tolist() == [1, 2, 2]
    for dec2 in (Decoder(ts, reset_per_packet=True), ColumnDecoder(ts, reset_per_packet=True)):
        with pytest.raises(FastDecodeError, match=r"packet 1 message 1 at offset 1: .*ERR D5") as e:
            dec2.decode_packets([hb[0], hb[1]])
        assert e.value.packet_index == 1
        assert [m.to_text() for m in e.value.messages] == texts[:1]


def test_a_message_cut_at_its_packet_end_is_an_error() -> None:
    ts, cases = _cqg()
    hb = cases[0][2]
    packets = [hb[0] + hb[1][:4], hb[1][4:] + hb[2]]  # the second heartbeat split in two
    for dec in (Decoder(ts), ColumnDecoder(ts)):
        with pytest.raises(FastDecodeError) as e:
            dec.decode_packets(packets)
        assert (e.value.packet_index, e.value.message_index) == (0, 1)
        assert len(e.value.messages) == 1


# --- bad input --------------------------------------------------------------------------


def _errors(ts: TemplateSet, data: bytes) -> list[FastDecodeError]:
    errors = []
    for dec in (Decoder(ts), ColumnDecoder(ts)):
        with pytest.raises(FastDecodeError) as e:
            dec.decode(data)
        errors.append(e.value)
    return errors


def test_cut_stop_bit_integer_names_offset_field_and_keeps_earlier_messages() -> None:
    ts, cases = _cqg()
    hb = cases[0][2]
    data = hb[0] + hb[1][:-2]  # the second heartbeat's SendingTime loses its last bytes
    for e in _errors(ts, data):
        assert e.offset == len(hb[0]) + 2  # pmap, MsgSeqNum, then SendingTime
        assert e.field == "SendingTime"
        assert e.message_index == 1
        assert "cut off" in str(e)
        assert [m.to_text() for m in e.messages] == [cases[0][3][0]]
    assert e.columns is not None
    assert e.columns.tables["MDHeartbeat"]["MsgSeqNum"].tolist() == [1]


def test_unknown_template_id_is_reported_where_it_stands() -> None:
    ts, cases = _cqg()
    logon = cases[1][2][0]
    for e in _errors(ts, logon + pm(1) + u(99) + b"\x81"):
        assert e.offset == len(logon) + 1
        assert e.field == "template id"
        assert "unknown template id 99" in str(e)
        assert [m.name for m in e.messages] == ["MDLogon"]


def test_bad_presence_maps_are_reported() -> None:
    ts, cases = _cqg()
    logon = cases[1][2][0]
    overlong = logon + b"\x40\x80" + u(4) + logon[2:]  # second pmap byte carries no bit
    for e in _errors(ts, overlong):
        assert (e.offset, e.field) == (len(logon), "pmap")
        assert "overlong" in str(e)
        assert len(e.messages) == 1
    extra_bit = b"\xe0" + logon[1:]  # a second bit set: MDLogon uses only the template id
    for e in _errors(ts, extra_bit):
        assert (e.offset, e.field) == (0, "pmap")
        assert "ERR R8" in str(e)
    runaway = b"\x7f" * 70
    for e in _errors(ts, runaway):
        assert (e.offset, e.field) == (0, "pmap")
        assert "longer than 64 bytes" in str(e)


def test_integer_outside_its_type_is_reported() -> None:
    ts, _ = _cqg()
    too_big = pm(1) + u(4) + u(1 << 32) + u(1)  # MsgSeqNum is uInt32
    for e in _errors(ts, too_big):
        assert (e.offset, e.field) == (2, "MsgSeqNum")
        assert "ERR R4" in str(e)


def _decode_both_keeping(ts: TemplateSet, data: bytes) -> tuple[list[str], list[str]]:
    """Return both decoders' texts up to an error (FastDecodeError only: anything else fails)."""
    try:
        py = Decoder(ts).decode(data)
    except FastDecodeError as e:
        py = e.messages
    try:
        partial = ColumnDecoder(ts).decode(data)
    except FastDecodeError as e:
        if e.columns is None:
            raise
        partial = e.columns
    cols = partial.messages()
    # the session-control Reset is a message to the Python decoder, no row to the kernel
    return [m.to_text() for m in py if m.name != "Reset"], [m.to_text() for m in cols]


@settings(max_examples=150, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 10_000),
)
def test_mangled_cqg_stream_gives_values_or_a_decode_error_and_both_agree(
    edits: list[tuple[int, int]], cut: int
) -> None:
    ts, cases = _cqg()
    raws = [r for name, _, rs, _ in cases if name != "test_messages_json" for r in rs]
    data = bytearray(b"".join(raws))
    for at, byte in edits:
        data[at % len(data)] = byte
    data = data[: max(1, cut % (len(data) + 1))]
    py, cols = _decode_both_keeping(ts, bytes(data))
    assert py == cols


def test_64_bit_overflow_is_reported_by_both() -> None:
    xml = """<templates><template name="W" id="1">
      <uInt64 name="U" id="1"><delta/></uInt64>
      <int64 name="I" id="2"><increment/></int64>
    </template></templates>"""
    ts = TemplateSet.from_xml(xml)
    first = pm(1, 1) + u(1) + i(-1) + i((1 << 63) - 1)  # U = 0 - 1: below zero
    for e in _errors(ts, first):
        assert (e.offset, e.field) == (2, "U")
        assert "ERR R4" in str(e)
    # I starts one below the largest int64 and is incremented past it on the third message
    steps = pm(1, 1) + u(1) + i(1 << 62) + i((1 << 63) - 2)
    steps += pm(0, 0) + i(1 << 62) + pm(0, 0) + i((1 << 63) - 1)  # U: 2**63, then 2**64 - 1
    for e in _errors(ts, steps):
        assert e.field == "I"
        assert e.message_index == 2
        assert "ERR R4" in str(e)
    assert e.columns is not None
    assert e.columns.tables["W"]["U"].tolist() == [1 << 62, 1 << 63]
    assert e.columns.tables["W"]["I"].tolist() == [(1 << 63) - 2, (1 << 63) - 1]
    up = pm(1, 1) + u(1) + i(1 << 62) + i(0) + pm(0, 1) + i((1 << 63) - 1) + i(5)
    up += pm(0, 1) + i((1 << 62) + 1) + i(0)  # U reaches 2**64
    for e in _errors(ts, up):
        assert (e.field, e.message_index) == ("U", 2)
    over = pm(1, 1) + u(1) + bytes([0x02] + [0] * 8 + [0x80]) + i(0)  # 2**64: 65 bits
    for e2 in _errors(ts, over):
        assert e2.field == "U"


def test_bad_lengths_are_decode_errors_not_crashes() -> None:
    xml = """<templates><template name="T" id="1">
      <byteVector name="B" id="1"/>
      <sequence name="S"><length name="N" id="2"/><uInt32 name="C" id="3">
        <constant value="1"/></uInt32></sequence>
    </template></templates>"""
    ts = TemplateSet.from_xml(xml)
    huge_vector = pm(1) + u(1) + b"\x01\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\xff"  # wraps negative
    for e in _errors(ts, huge_vector):
        assert (e.offset, e.field) == (2, "B")
    many = pm(1) + u(1) + u(0) + u(1 << 30)  # a billion elements of no bytes each
    for e in _errors(ts, many):
        assert e.field in ("N", "S")
        assert "more than the bytes left" in str(e)
    ok = pm(1) + u(1) + u(0) + u(3)
    assert _both(ts, ok)[0].to_text() == "T=<B=|S=<C=1><C=1><C=1>>"


# --- the kernel's buffers grow -------------------------------------------------------------


def test_kernel_grows_rows_heap_and_dictionary_slots_and_matches_python() -> None:
    xml = """<templates>
      <template name="T" id="1">
        <string name="S" id="1"><copy/></string>
        <sequence name="L"><length name="N" id="2"/><uInt32 name="V" id="3"><increment/></uInt32>
        </sequence>
      </template>
    </templates>"""
    ts = TemplateSet.from_xml(xml)
    long_text = "x" * 300  # longer than a dictionary slot's 64 bytes
    parts = [pm(1, 1) + u(1) + s(long_text) + u(200) + pm(1) + u(0) + pm(0) * 199]
    parts += [pm(0, 0) + u(3) + pm(0) * 3 for _ in range(5000)]
    data = b"".join(parts)
    dec = ColumnDecoder(ts)
    cols = dec.decode(data)
    py = Decoder(ts).decode(data)
    assert len(py) == cols.n_messages == 5001
    assert [m.to_text() for m in cols.messages()] == [m.to_text() for m in py]
    assert cols.tables["T.L"]["V"][-1] == 199 + 5000 * 3
    assert cols.string("T", "S", 5000) == long_text


def test_decoding_into_reused_arrays_clears_presence_and_matches() -> None:
    ts = TemplateSet.from_xml(OPS_XML)
    with_opt = pm(1, 0, 1, 0, 0, 0, 0) + u(1) + nu(3) + i(0) + i(0) + s("") + i(0) + i(0)
    without = pm(1, 0, 1, 0, 0, 0, 0) + u(1) + nu(None) + i(0) + i(0) + s("") + i(0) + i(0)
    dec = ColumnDecoder(ts, reset_per_packet=True)
    first = dec.decode(with_opt * 50, reuse=True)
    assert first.present("Ops", "CopyOpt").all()
    second = dec.decode(without * 50, reuse=True)  # the same arrays, written again
    assert np.shares_memory(first.tables["Ops"], second.tables["Ops"])
    assert not second.present("Ops", "CopyOpt").any()
    py = Decoder(ts).decode(without * 50)
    assert [m.to_text() for m in second.messages()] == [m.to_text() for m in py]
    fresh = dec.decode(without * 50)
    assert not np.shares_memory(fresh.tables["Ops"], second.tables["Ops"])


# --- templates ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        (
            '<templates>\n<template name="T" id="1">\n<foo/>\n</template></templates>',
            r"<string>:3: <foo>: unknown element",
        ),
        (
            '<templates>\n<template name="T" id="1">\n<uInt32 name="A"><constant/></uInt32>'
            "</template></templates>",
            r":3: <constant>: constant of 'A' needs a value",
        ),
        (
            '<templates><template name="T" id="1">\n<templateRef name="H"/></template></templates>',
            r":2: <templateRef name='H'>: references template 'H', which is not defined",
        ),
        (
            '<templates><template name="A"><templateRef name="B"/></template>\n'
            '<template name="B" id="2"><templateRef name="A"/></template></templates>',
            r"cycle: .*A -> B -> A|cycle: .*B -> A -> B",
        ),
        ('<templates><template name="T" id="x"/></templates>', r"id 'x' is not an integer"),
        (
            '<templates><template name="T" id="1">\n<uInt32 name="A"><increment value="q"/>'
            "</uInt32></template></templates>",
            r":2: <increment>: value 'q' is not an integer",
        ),
        ("<templates><template", r"not well-formed XML"),
    ],
)
def test_template_errors_name_line_element_and_reason(xml: str, match: str) -> None:
    with pytest.raises(TemplateError, match=match):
        TemplateSet.from_xml(xml)


def test_cqg_templates_read_with_their_structure() -> None:
    ts, _ = _cqg()
    assert sorted(ts.by_id) == [2, 4, 5, 6, 7]
    assert "MsgHeader" not in ts.by_name  # no id: only referenced statically
    names = [getattr(x, "name", "") for x in ts.by_id[4].instructions]
    assert names == ["MessageType", "ApplVerID", "SenderCompID", "MsgSeqNum", "SendingTime"]
    with pytest.raises(TemplateError, match="cannot read template file"):
        TemplateSet.from_file(CQG / "no-such.xml")


def test_warm_up_decodes_its_messages_from_bytes_and_from_an_array() -> None:
    from engine.feeds.fast.columnar import warm_up

    warm_up()  # raises RuntimeError if a decoded value differs
